-- Start job `p_id`, which failed or was cancelled, again at the stage it stopped on, with fresh
-- attempts; its history (results, errors) stays. A group or map stage whose members ran starts
-- again only its members that did not complete, each the same way (at the stage it stopped on,
-- its own members likewise), and keeps the outputs of those that did: a bounded map restarts as
-- many as its `concurrency` leaves room for, in element order, and queues the rest in
-- `map_elements` (`job_id`), before its elements not started yet. Any other stage starts afresh.
-- The caller holds the job's row and has checked that none of its members is unfinished. Returns
-- the queue and the lane (NULL: none) of every job made ready: a laned one waits for its lane,
-- which the caller locks and admits (`promote_lanes`).
CREATE OR REPLACE FUNCTION restart_job(p_id bigint) RETURNS TABLE (queue text, lane text)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
#variable_conflict use_column
DECLARE
    v_job jobs;
    v_members int;
    v_failed bigint[];
    v_failures int;
    v_unstarted int;
    v_bound int;
    v_now int;
BEGIN
    SELECT * INTO v_job FROM jobs j WHERE j.id = p_id;
    SELECT count(*), array_agg(m.id ORDER BY m.member_index) FILTER (WHERE m.state <> 'completed')
    INTO v_members, v_failed
    FROM jobs m WHERE m.parent_id = p_id AND m.parent_stage = v_job.stage;
    IF v_members = 0 THEN
        DELETE FROM map_elements e WHERE e.parent_id = p_id;
        UPDATE jobs j SET
            state = (CASE WHEN j.lane IS NULL THEN 'available' ELSE 'waiting' END)::job_state,
            attempt = 0, run_at = now(), finished_at = NULL, worker_id = NULL, pending = NULL, failed = NULL,
            group_output = NULL, lane_ready_at = clock_timestamp()
        WHERE j.id = p_id;
        RETURN QUERY SELECT v_job.queue, v_job.lane;
        RETURN;
    END IF;
    -- Runs a retry before this one queued, and failed again since: among `v_failed` now.
    DELETE FROM map_elements e WHERE e.parent_id = p_id AND e.stage = v_job.stage AND e.job_id IS NOT NULL;
    SELECT count(*) INTO v_unstarted FROM map_elements e WHERE e.parent_id = p_id AND e.stage = v_job.stage;
    IF v_failed IS NULL AND v_unstarted = 0 THEN
        -- Every member completed (the job was cancelled after its fan-in): it hands them on again.
        UPDATE jobs j SET state = 'available', attempt = 0, run_at = now(), finished_at = NULL, worker_id = NULL,
            pending = NULL, failed = NULL,
            group_output = map_output(p_id, j.stage)
        WHERE j.id = p_id;
        RETURN QUERY SELECT v_job.queue, NULL::text;
        RETURN;
    END IF;
    v_failures := coalesce(cardinality(v_failed), 0);
    v_bound := (v_job.chain -> v_job.stage ->> 'concurrency')::int;
    v_now := least(v_failures, coalesce(v_bound, v_failures));
    UPDATE jobs j SET state = 'waiting', attempt = 0, run_at = now(), finished_at = NULL, worker_id = NULL,
        pending = v_failures + v_unstarted, failed = NULL, group_output = NULL
    WHERE j.id = p_id;
    INSERT INTO map_elements (parent_id, stage, index, value, job_id)
    SELECT p_id, v_job.stage, m.member_index, NULL, m.id
    FROM jobs m WHERE m.id = ANY (v_failed[v_now + 1:]);
    RETURN QUERY SELECT r.queue, r.lane FROM unnest(v_failed[1:v_now]) x(id), restart_job(x.id) r;
    -- Room left under the bound: elements not started yet start too.
    IF v_bound IS NOT NULL AND v_now < v_bound AND v_unstarted > 0 THEN
        RETURN QUERY SELECT r.queue, r.lane FROM map_runs_next(p_id, v_bound - v_now) r;
    END IF;
END $$;
