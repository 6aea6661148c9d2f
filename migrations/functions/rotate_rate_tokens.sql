-- Empties the slots of `rate_tokens` (migration 22) that rows are no longer written to, as
-- `rotate_ready` does for `ready`: each bucket in such a slot moves to the current slot, keeping
-- its tokens, and the slot is truncated, its dead versions with it whatever holds the xmin horizon.
-- A bucket whose limit was deleted is left to the truncation. Under rotation's exclusive lock (see
-- `lock_rate_keys`), waited for 50 ms at most, as each slot's lock is: claims of limited keys wait
-- behind it meanwhile; what is still busy then is emptied at the next call. The maintenance leader
-- calls it every second (Store.rotateRateTokens). Returns the slots truncated.
CREATE OR REPLACE FUNCTION rotate_rate_tokens() RETURNS SETOF smallint
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off SET lock_timeout = '50ms' AS $$
DECLARE
    v_current smallint := ready_slot();
    v_slot smallint;
BEGIN
    BEGIN
        PERFORM pg_advisory_xact_lock(1650553938, 0);
    EXCEPTION WHEN lock_not_available THEN
        RETURN;
    END;
    FOR v_slot IN SELECT locked_old_slots('rate_tokens') LOOP
        -- Each key's row by its key (a subquery), as in `rotate_ready`.
        EXECUTE format(
            'INSERT INTO rate_tokens (slot, key, tokens, refilled_at)
             SELECT %s, t.key, t.tokens, t.refilled_at FROM rate_tokens_%s t
             WHERE EXISTS (SELECT 1 FROM rate_limits r WHERE r.key = t.key)', v_current, v_slot);
        EXECUTE format('TRUNCATE rate_tokens_%s', v_slot);
        RETURN NEXT v_slot;
    END LOOP;
END $$;
