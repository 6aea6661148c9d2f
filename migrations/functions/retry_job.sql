-- Run a scheduled or retryable job's stage now (its delay or backoff cut short, its attempts as
-- they are; a lane holder waiting to retry keeps its place), or start a discarded or cancelled
-- job again at the stage it stopped on, with fresh attempts (`restart_job`); its history (results,
-- errors) stays. A laned stage rejoins the back of its lane. A group or map stage starts again only
-- its members that did not complete, so the job must not have members still running (cancel or
-- wait for them first). Group members are retried through their parent. A job whose unique key
-- another job holds now (the rule left it out in its final state) stays as it is.
-- Returns (id, queue, state) of the job, or nothing when it is not retryable; raises
-- `no_data_found` for an unknown id.
CREATE OR REPLACE FUNCTION retry_job(p_id bigint) RETURNS TABLE (id bigint, queue text, state job_state)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
#variable_conflict use_column
DECLARE
    v_job jobs;
    v_lanes text[];
    v_queues text[];
BEGIN
    SELECT * INTO v_job FROM jobs j WHERE j.id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % not found', p_id USING ERRCODE = 'no_data_found';
    END IF;
    IF v_job.state IN ('scheduled', 'retryable') THEN
        -- Due now, and promoted as the scheduler would: `promote_due_from` from now() takes the
        -- jobs whose due time is this transaction's now(), this one.
        UPDATE jobs j SET run_at = now() WHERE j.id = p_id;
        PERFORM promote_due_from(1, now());
        RETURN QUERY SELECT j.id, j.queue, j.state FROM jobs j WHERE j.id = p_id;
        RETURN;
    END IF;
    IF v_job.state NOT IN ('discarded', 'cancelled') OR v_job.parent_id IS NOT NULL
       OR unfinished_members(p_id) THEN
        RETURN;
    END IF;
    IF v_job.unique_key IS NOT NULL AND EXISTS (
        SELECT 1 FROM jobs o WHERE o.unique_key = v_job.unique_key AND o.state = ANY (o.unique_states)
          AND o.id <> p_id)
    THEN
        RETURN;
    END IF;
    SELECT array_agg(DISTINCT r.lane) FILTER (WHERE r.lane IS NOT NULL), array_agg(DISTINCT r.queue)
    INTO v_lanes, v_queues FROM restart_job(p_id) r;
    IF v_lanes IS NOT NULL THEN
        PERFORM lock_lanes(v_lanes);
        PERFORM promote_lanes(v_lanes);
    END IF;
    -- The queues of its members started again (the caller wakes the job's own).
    PERFORM pg_notify(current_schema() || '_events', 'q:' || q)
    FROM unnest(v_queues) q WHERE q <> v_job.queue;
    RETURN QUERY SELECT j.id, j.queue, j.state FROM jobs j WHERE j.id = p_id;
END $$;
