-- Empties the slots of `lane_holds` (migration 21) that rows are no longer written to, as
-- `rotate_ready` does `ready`'s: every slot but the current second's and the one before. The rows
-- whose jobs still hold (holders that have held for two seconds or more) move to
-- `lane_holds_long`, which vacuum keeps, each looked up by its key (see `rotate_ready`), and the
-- slot is truncated: stale rows, and those admissions deleted, go whatever the horizon.
-- Each slot is locked waiting 50 ms at most (as in `rotate_ready`, for the same reason); a slot
-- still busy then is emptied at the next call. The maintenance leader calls it every second
-- (Store.rotateLaneHolds). Returns the slots truncated.
CREATE OR REPLACE FUNCTION rotate_lane_holds() RETURNS SETOF smallint
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off SET lock_timeout = '50ms' AS $$
DECLARE
    v_current smallint := ready_slot();
    v_slot smallint;
BEGIN
    FOR v_slot IN
        SELECT s::smallint FROM generate_series(0, 3) s
        WHERE s NOT IN (v_current, (v_current + 3) % 4)
          AND pg_relation_size(format('%I.lane_holds_%s', current_schema(), s)) > 0
    LOOP
        BEGIN
            EXECUTE format('LOCK TABLE lane_holds_%s IN ACCESS EXCLUSIVE MODE', v_slot);
        EXCEPTION WHEN lock_not_available THEN
            CONTINUE;
        END;
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
