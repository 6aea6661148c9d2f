-- Superseded by `promote_due_from` (issue 46): kept, unchanged, for the workers of version 21
-- that still call it during an upgrade; a numbered file drops it once no release does.
-- Scheduled and retryable jobs that are due become available; a due scheduled job whose stage
-- names a lane joins that lane's queue (in order of its due time). Returns the queues woken.
CREATE OR REPLACE FUNCTION promote_due(p_limit int) RETURNS SETOF text
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
DECLARE
    v_queues text[];
    v_lanes text[];
BEGIN
    WITH due AS (
        SELECT d.id FROM jobs d
        WHERE d.state IN ('scheduled', 'retryable') AND d.run_at <= now()
        ORDER BY d.run_at LIMIT p_limit FOR UPDATE SKIP LOCKED
    ), upd AS (
        UPDATE jobs j SET
            state = (CASE WHEN j.state = 'scheduled' AND j.lane IS NOT NULL THEN 'waiting'
                          ELSE 'available' END)::job_state,
            lane_ready_at = CASE WHEN j.state = 'scheduled' THEN j.run_at ELSE j.lane_ready_at END
        -- By primary key from the ids locked, whatever their estimated number (see claim_for.sql).
        WHERE j.id = ANY (ARRAY(SELECT due.id FROM due))
        RETURNING j.queue, j.state, j.lane
    )
    SELECT array_agg(DISTINCT upd.queue) FILTER (WHERE upd.state = 'available'),
           array_agg(DISTINCT upd.lane) FILTER (WHERE upd.state = 'waiting')
    INTO v_queues, v_lanes FROM upd;
    IF v_lanes IS NOT NULL THEN
        PERFORM lock_lanes(v_lanes);
        -- Entered at their due time, perhaps below where their lanes' floors stand: the next
        -- admission probes each of those lanes whole.
        DELETE FROM lane_floors f WHERE f.lane = ANY (v_lanes);
        v_queues := v_queues || ARRAY(SELECT p.queue FROM promote_lanes(v_lanes) p);
    END IF;
    RETURN QUERY SELECT DISTINCT q FROM unnest(v_queues) AS q;
END $$;
