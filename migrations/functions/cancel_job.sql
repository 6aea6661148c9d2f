-- Cancel a job that has not finished, with its unfinished group members; lanes they held move on.
-- Returns (id, worker_id) of every job cancelled, so that the workers running them can stop.
CREATE OR REPLACE FUNCTION cancel_job(p_id bigint) RETURNS TABLE (id bigint, worker_id text, watched boolean)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    v_ids bigint[];
    v_lanes text[];
BEGIN
    WITH RECURSIVE tree AS (
        SELECT j.id, j.lane FROM jobs j WHERE j.id = p_id
        UNION ALL
        SELECT c.id, c.lane FROM jobs c JOIN tree t ON c.parent_id = t.id
    )
    SELECT array_agg(t.id), array_agg(t.lane) FILTER (WHERE t.lane IS NOT NULL) INTO v_ids, v_lanes FROM tree t;
    IF v_lanes IS NOT NULL THEN
        PERFORM lock_lanes(v_lanes);
    END IF;
    -- Counted in the queues' history (one row per queue, not per job).
    RETURN QUERY
    WITH c AS (
        UPDATE jobs j SET state = 'cancelled', finished_at = now(), worker_id = NULL, pending = NULL
        FROM jobs old
        WHERE j.id = ANY(v_ids) AND old.id = j.id
          AND j.state NOT IN ('completed', 'discarded', 'cancelled')
        RETURNING j.id, j.queue, old.worker_id, j.watched
    ), counted AS (
        INSERT INTO queue_minutes AS q (minute, queue, cancelled)
        SELECT date_trunc('minute', now()), c.queue, count(*) FROM c GROUP BY c.queue ORDER BY c.queue
        ON CONFLICT (minute, queue) DO UPDATE SET cancelled = q.cancelled + excluded.cancelled
    ) SELECT c.id, c.worker_id, c.watched FROM c;
    -- A cancelled member fails its group, as a discarded one does.
    IF (SELECT j.parent_id FROM jobs j WHERE j.id = p_id) IS NOT NULL THEN
        RETURN QUERY SELECT f, NULL::text, true FROM fail_parents(ARRAY[p_id], NULL) AS f;
    END IF;
    IF v_lanes IS NOT NULL THEN
        PERFORM promote_lanes(v_lanes);
    END IF;
END $$;
