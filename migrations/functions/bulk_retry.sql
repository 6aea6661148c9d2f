-- Retries each job of `p_ids` that `retry_job` would; returns those it retried.
-- One batch (at most a thousand jobs, picked by the caller's filter) per call and per transaction.
-- Every lane the batch touches is locked first, in one sorted step, then the rows: the workers'
-- order (`apply_outcomes`), so a batch of laned jobs cannot deadlock with them. (`retry_job` alone locks
-- a row before its lane: safe for one job, not for a thousand.)
CREATE OR REPLACE FUNCTION bulk_retry(p_ids bigint[]) RETURNS TABLE (id bigint, queue text, state job_state)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
#variable_conflict use_column
BEGIN
    PERFORM lock_lanes(ARRAY(SELECT j.lane FROM jobs j WHERE j.id = ANY(p_ids) AND j.lane IS NOT NULL));
    RETURN QUERY
    SELECT r.id, r.queue, r.state
    FROM (SELECT j.id FROM jobs j WHERE j.id = ANY(p_ids) ORDER BY j.id FOR UPDATE) t, LATERAL retry_job(t.id) r;
END $$;
