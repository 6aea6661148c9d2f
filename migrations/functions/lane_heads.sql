-- For each lane without a holder, its oldest waiting job: the one `promote_lanes` makes the holder.
-- Call with the lanes locked.
CREATE OR REPLACE FUNCTION lane_heads(p_lanes text[]) RETURNS TABLE (id bigint)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY
    SELECT next.id FROM (
        SELECT (SELECT w.id FROM jobs w
                WHERE w.lane = l AND w.state = 'waiting'
                ORDER BY w.lane_ready_at, w.id LIMIT 1) AS id
        FROM (SELECT DISTINCT l FROM unnest(p_lanes) AS l WHERE l IS NOT NULL) lanes
        WHERE NOT EXISTS (SELECT 1 FROM jobs h
                          WHERE h.lane = lanes.l AND h.state IN ('available', 'running', 'retryable'))
    ) next WHERE next.id IS NOT NULL;
END $$;
