-- For each lane without a holder, make its oldest waiting job the holder (`lane_heads`). Call with
-- the lanes locked. Returns the jobs made available.
CREATE OR REPLACE FUNCTION promote_lanes(p_lanes text[]) RETURNS TABLE (id bigint, queue text)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY
    UPDATE jobs j SET state = 'available', run_at = now()
    FROM lane_heads(p_lanes) next
    WHERE j.id = next.id
    RETURNING j.id, j.queue;
END $$;
