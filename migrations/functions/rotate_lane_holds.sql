-- Empties the slots of `lane_holds` (migration 21) that rows are no longer written to, as
-- `rotate_ready` does `ready`'s: every slot but the current second's and the one before. The rows
-- whose jobs still hold (holders that have held for two seconds or more) move to
-- `lane_holds_long`, which vacuum keeps, each looked up by its key (see `rotate_ready`), and the
-- slot is truncated: stale rows, and those admissions deleted, go whatever the horizon.
-- Each slot is locked waiting 50 ms at most (`locked_old_slots`); a slot still busy then is
-- emptied at the next call. The maintenance leader calls it every second
-- (Store.rotateLaneHolds). Returns the slots truncated.
CREATE OR REPLACE FUNCTION rotate_lane_holds() RETURNS SETOF smallint
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off SET lock_timeout = '50ms' AS $$
DECLARE
    v_slot smallint;
BEGIN
    FOR v_slot IN SELECT locked_old_slots('lane_holds') LOOP
        EXECUTE format(
            'INSERT INTO lane_holds (part, lane, lane_slot, job_id)
             SELECT 4, h.lane, h.lane_slot, h.job_id FROM lane_holds_%s h
             WHERE (SELECT j.lane = h.lane AND j.lane_slot = h.lane_slot
                           AND j.state IN (''available'', ''running'', ''retryable'')
                    FROM jobs j WHERE j.id = h.job_id)', v_slot);
        EXECUTE format('TRUNCATE lane_holds_%s', v_slot);
        RETURN NEXT v_slot;
    END LOOP;
END $$;
