-- Deliver signal `p_name` with `p_payload` to job `p_id`, once. Returns one row:
--   (outcome, state, queue) where outcome is
--   'resumed'    the job was waiting for it: it is available again (wake `queue`);
--   'kept'       the chain has not reached the stage yet: kept for it;
--   'duplicate'  this signal was delivered before: nothing changed (the first payload stands);
--   'late'       the job has finished or passed the stage: refused, nothing kept;
--   'unknown'    no stage of the job awaits this signal: refused;
--   no row       no such job.
-- The job's row is locked first: a worker committing the job's wait (apply_outcomes' 'await')
-- either commits before, and the job is found waiting here, or after, and finds the signal kept.
CREATE OR REPLACE FUNCTION deliver_signal(p_id bigint, p_name text, p_payload jsonb)
RETURNS TABLE (outcome text, state job_state, queue text)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
#variable_conflict use_column
DECLARE
    v_job jobs%ROWTYPE;
    v_stage int;
BEGIN
    SELECT * INTO v_job FROM jobs j WHERE j.id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT (s.n - 1)::int INTO v_stage
    FROM jsonb_array_elements(v_job.chain) WITH ORDINALITY AS s(stage, n) WHERE s.stage ->> 'await' = p_name;
    IF v_stage IS NULL THEN
        RETURN QUERY SELECT 'unknown', v_job.state, v_job.queue;
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM job_signals s WHERE s.job_id = p_id AND s.name = p_name) THEN
        RETURN QUERY SELECT 'duplicate', v_job.state, v_job.queue;
        RETURN;
    END IF;
    IF v_job.state IN ('completed', 'discarded', 'cancelled') OR v_job.stage > v_stage THEN
        RETURN QUERY SELECT 'late', v_job.state, v_job.queue;
        RETURN;
    END IF;
    INSERT INTO job_signals (job_id, name, payload) VALUES (p_id, p_name, p_payload);
    IF v_job.stage = v_stage AND v_job.state = 'waiting' AND v_job.lane IS NULL AND v_job.pending IS NULL THEN
        -- The claim that follows counts the attempt again: the wait and its end are one attempt.
        UPDATE jobs j SET state = 'available', run_at = now(), attempt = j.attempt - 1 WHERE j.id = p_id;
        RETURN QUERY SELECT 'resumed', 'available'::job_state, v_job.queue;
        RETURN;
    END IF;
    RETURN QUERY SELECT 'kept', v_job.state, v_job.queue;
END $$;
