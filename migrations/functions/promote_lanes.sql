-- For each lane without a holder, make its oldest waiting job the holder. Call with the lanes locked.
-- Returns the jobs made available.
CREATE OR REPLACE FUNCTION promote_lanes(p_lanes text[]) RETURNS TABLE (id bigint, queue text)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY
    UPDATE jobs j SET state = 'available', run_at = now()
    FROM (
        SELECT (SELECT w.id FROM jobs w
                WHERE w.lane = l AND w.state = 'waiting'
                ORDER BY w.lane_ready_at, w.id LIMIT 1) AS id
        FROM (SELECT DISTINCT l FROM unnest(p_lanes) AS l WHERE l IS NOT NULL) lanes
        WHERE NOT EXISTS (SELECT 1 FROM jobs h
                          WHERE h.lane = lanes.l AND h.state IN ('available', 'running', 'retryable'))
    ) next
    WHERE j.id = next.id
    RETURNING j.id, j.queue;
END $$;
