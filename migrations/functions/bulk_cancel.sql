-- Cancels each unfinished job of `p_ids` with its unfinished members, in one pass over the set;
-- lanes they held move on, and a cancelled member fails its group (as a discarded one does, or is
-- counted by a map that goes on past failures, which may start its next run: woken here).
-- Returns (id, worker_id, watched) of every job cancelled, members too, so that the workers
-- running them can stop, and (id, NULL, true) of each group failed by it. `cancel_job` is this for
-- one job.
-- One batch (at most a thousand jobs, picked by the caller's filter) per call and per transaction.
-- Every lane the batch touches is locked first, in one sorted step, then the rows in id order: the
-- workers' order (`apply_outcomes`), so a batch of laned jobs cannot deadlock with them. The
-- cancels are counted in the queues' history once per queue, not once per job (a thousand upserts
-- of one row in one transaction walk an ever longer chain of its versions).
CREATE OR REPLACE FUNCTION bulk_cancel(p_ids bigint[]) RETURNS TABLE (id bigint, worker_id text, watched boolean)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
#variable_conflict use_column
DECLARE
    v_ids bigint[];
    v_lanes text[];
    v_cancelled bigint[];
    v_workers text[];
    v_watched boolean[];
    v_members bigint[];
    v_parents bigint[];
    v_failed bigint[];
    v_woken text[];
BEGIN
    WITH RECURSIVE tree AS (
        SELECT j.id, j.lane, j.parent_id FROM jobs j WHERE j.id = ANY(p_ids)
        UNION ALL
        SELECT c.id, c.lane, c.parent_id FROM jobs c JOIN tree t ON c.parent_id = t.id
    )
    SELECT array_agg(t.id), array_agg(DISTINCT t.lane) FILTER (WHERE t.lane IS NOT NULL),
           array_agg(DISTINCT t.parent_id) FILTER (WHERE t.parent_id IS NOT NULL)
    INTO v_ids, v_lanes, v_parents
    FROM tree t;
    -- A cancelled run of a map that goes on past failures may start the next (`fail_members`).
    v_lanes := nullif(coalesce(v_lanes, '{}') || ARRAY(SELECT map_lanes(v_parents)), '{}');
    IF v_lanes IS NOT NULL THEN
        PERFORM lock_lanes(v_lanes);
    END IF;
    PERFORM 1 FROM jobs j WHERE j.id = ANY(v_ids) ORDER BY j.id FOR UPDATE;
    WITH c AS (
        UPDATE jobs j SET state = 'cancelled', finished_at = now(), worker_id = NULL, pending = NULL
        FROM jobs old
        WHERE j.id = ANY(v_ids) AND old.id = j.id
          AND j.state NOT IN ('completed', 'discarded', 'cancelled')
        RETURNING j.id, j.queue, old.worker_id, j.watched, j.parent_id
    ), counted AS (
        INSERT INTO queue_minutes AS q (minute, queue, cancelled)
        SELECT date_trunc('minute', now()), c.queue, count(*) FROM c GROUP BY c.queue ORDER BY c.queue
        ON CONFLICT (minute, queue) DO UPDATE SET cancelled = q.cancelled + excluded.cancelled
    )
    SELECT array_agg(c.id), array_agg(c.worker_id), array_agg(c.watched),
           array_agg(c.id) FILTER (WHERE c.parent_id IS NOT NULL AND NOT c.parent_id = ANY(v_ids))
    INTO v_cancelled, v_workers, v_watched, v_members FROM c;
    RETURN QUERY SELECT * FROM unnest(v_cancelled, v_workers, v_watched);
    IF v_members IS NOT NULL THEN
        SELECT array_agg(f.id) FILTER (WHERE f.event = 'finished'),
               array_agg(DISTINCT f.queue) FILTER (WHERE f.event = 'wake')
        INTO v_failed, v_woken FROM fail_members(v_members, NULL) f;
        RETURN QUERY SELECT f, NULL::text, true FROM unnest(v_failed) f;
        PERFORM pg_notify(current_schema() || '_events', 'q:' || q) FROM unnest(v_woken) q;
    END IF;
    IF v_lanes IS NOT NULL THEN
        PERFORM promote_lanes(v_lanes);
    END IF;
END $$;
