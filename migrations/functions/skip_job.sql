-- Discard a job that is not running, for the operator's reason, recorded as its stage's last
-- error ("skipped: <reason>") and counted in its queue's history as a discard: the way past a lane
-- holder that waits to retry (its lane moves on at once, the next job admitted), or past any job
-- that is not to run. A running job is cancelled instead (its worker must stop); a group member is
-- skipped with its parent, and a group stage waiting for its members is cancelled. Returns the job
-- (id, queue, whether someone awaits its end) and the queues the lane's next jobs were admitted
-- to, nothing when it cannot be skipped; raises `no_data_found` for an unknown id.
CREATE OR REPLACE FUNCTION skip_job(p_id bigint, p_reason text)
RETURNS TABLE (id bigint, queue text, watched boolean, woken text[])
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
#variable_conflict use_column
DECLARE
    v_lane text;
    v_job jobs;
BEGIN
    SELECT j.lane INTO v_lane FROM jobs j WHERE j.id = p_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % not found', p_id USING ERRCODE = 'no_data_found';
    END IF;
    -- The lane first, then the row: the workers' order (`apply_outcomes`).
    IF v_lane IS NOT NULL THEN
        PERFORM lock_lanes(ARRAY[v_lane]);
    END IF;
    SELECT * INTO v_job FROM jobs j WHERE j.id = p_id FOR UPDATE;
    IF v_job.state NOT IN ('scheduled', 'available', 'retryable', 'waiting') OR v_job.parent_id IS NOT NULL
       OR v_job.pending IS NOT NULL OR v_job.lane IS DISTINCT FROM v_lane THEN
        RETURN;
    END IF;
    UPDATE jobs j SET
        state = 'discarded', finished_at = now(), worker_id = NULL,
        errors = j.errors || jsonb_build_array(jsonb_build_object(
            'stage', j.stage, 'attempt', j.attempt, 'at', now(), 'worker', NULL, 'error', 'skipped: ' || p_reason))
    WHERE j.id = p_id;
    INSERT INTO queue_minutes AS q (minute, queue, discarded) VALUES (date_trunc('minute', now()), v_job.queue, 1)
    ON CONFLICT (minute, queue) DO UPDATE SET discarded = q.discarded + 1;
    RETURN QUERY SELECT v_job.id, v_job.queue, v_job.watched,
        CASE WHEN v_lane IS NULL THEN '{}'::text[]
             ELSE ARRAY(SELECT DISTINCT p.queue FROM promote_lanes(ARRAY[v_lane]) p) END;
END $$;
