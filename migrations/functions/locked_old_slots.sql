-- The slots of `p_table` (`ready`, `lane_holds`: partitions `<table>_0` to `_3` by `ready_slot()`)
-- that rows are no longer written to, that hold something, each locked for the rest of the
-- transaction so that its rows can be moved and the slot truncated: every slot but the current
-- second's and the one before. Each lock is waited for as long as the caller's `lock_timeout`; a
-- slot still busy then is left out, emptied at the next call. (Without waiting, as `NOWAIT`, the
-- lock was rarely free under load: a slot left holding its dead rows made claims slower and so
-- busier, until none could be emptied: docs/benchmarks.md#issue-46-the-claims-own-table-2026-12-06.)
CREATE OR REPLACE FUNCTION locked_old_slots(p_table text) RETURNS SETOF smallint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    v_current smallint := ready_slot();
    v_slot smallint;
BEGIN
    FOR v_slot IN
        SELECT s::smallint FROM generate_series(0, 3) s
        WHERE s NOT IN (v_current, (v_current + 3) % 4)
          AND pg_relation_size(format('%I.%I', current_schema(), p_table || '_' || s)) > 0
    LOOP
        BEGIN
            EXECUTE format('LOCK TABLE %I IN ACCESS EXCLUSIVE MODE', p_table || '_' || v_slot);
            RETURN NEXT v_slot;
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
    END LOOP;
END $$;
