-- Cancels each unfinished job of `p_ids` with its unfinished members; returns every job cancelled
-- (members too) as `cancel_job` does.
-- One batch (at most a thousand jobs, picked by the caller's filter) per call and per transaction.
-- Every lane the batch touches is locked first, in one sorted step, then the rows: the workers'
-- order (`apply_outcomes`), so a batch of laned jobs cannot deadlock with them. (`cancel_job` sorts the
-- lanes of one job; a thousand calls in a row would not be sorted across jobs.)
CREATE OR REPLACE FUNCTION bulk_cancel(p_ids bigint[]) RETURNS TABLE (id bigint, worker_id text, watched boolean)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    PERFORM lock_lanes(ARRAY(
        WITH RECURSIVE tree AS (
            SELECT j.id, j.lane FROM jobs j WHERE j.id = ANY(p_ids)
            UNION ALL
            SELECT c.id, c.lane FROM jobs c JOIN tree t ON c.parent_id = t.id
        ) SELECT t.lane FROM tree t WHERE t.lane IS NOT NULL));
    RETURN QUERY
    SELECT c.id, c.worker_id, c.watched
    FROM (SELECT j.id FROM jobs j WHERE j.id = ANY(p_ids) ORDER BY j.id FOR UPDATE) t, LATERAL cancel_job(t.id) c;
END $$;
