-- Empties the slots of `ready` (migration 20) that rows are no longer written to: every slot but
-- the current second's and the one before (see `ready_slot`). A slot's rows that are still there
-- (stages not claimed yet) move to the current slot, keeping their place in the claim's order, and
-- the slot is truncated: its dead rows go whatever holds the xmin horizon, which vacuum could not
-- do. The maintenance leader calls it every second (Store.rotateReady).
--
-- Each slot is locked waiting 50 ms at most (`lock_timeout`, `locked_old_slots`): a claim in
-- progress holds every slot for a few milliseconds, and claims queue behind the request meanwhile,
-- so it is granted once the claims before it end; a slot still busy then is emptied at the next
-- call. A slot with more than `p_most` rows
-- left is not moved (a backlog: copying it every few seconds would cost more than the dead rows do);
-- it is emptied once its backlog has been claimed. Returns the slots truncated.
CREATE OR REPLACE FUNCTION rotate_ready(p_most int) RETURNS SETOF smallint
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off SET lock_timeout = '50ms' AS $$
DECLARE
    v_current smallint := ready_slot();
    v_slot smallint;
    v_left int;
BEGIN
    FOR v_slot IN SELECT locked_old_slots('ready') LOOP
        EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM ready_%s LIMIT %s) r', v_slot, p_most + 1) INTO v_left;
        CONTINUE WHEN v_left > p_most;
        -- Rows whose job is no longer available there are left to the truncation. Each job is
        -- looked up by its key (a subquery, which no plan turns into a join): the slot is locked
        -- until commit, and a join planned with `ready`'s partitions never analysed once hashed a
        -- sequential scan of all of `jobs`, which during a held horizon took seconds while every
        -- claim waited for the lock (docs/benchmarks.md#issue-46-the-claims-own-table-2026-12-06).
        EXECUTE format(
            'INSERT INTO ready (slot, queue, rate_key, priority, run_at, job_id, task, fair_key, turn)
             SELECT %s, r.queue, r.rate_key, r.priority, r.run_at, r.job_id, r.task, r.fair_key, r.turn
             FROM ready_%s r
             WHERE (SELECT j.state = ''available'' AND j.queue = r.queue AND j.rate_key = r.rate_key
                    FROM jobs j WHERE j.id = r.job_id)', v_current, v_slot);
        EXECUTE format('TRUNCATE ready_%s', v_slot);
        RETURN NEXT v_slot;
    END LOOP;
END $$;
