-- Rate limit buckets (`rate_tokens`, migration 22) are read and written under their key's advisory
-- lock, held to the end of the transaction, and a shared lock that `rotate_rate_tokens` takes
-- exclusively while it moves rows between slots: taken in a statement of its own before the
-- bucket is read, so that the read's snapshot sees a move either whole or not begun. Keys in
-- sorted order: two transactions locking overlapping sets cannot deadlock. First keys: "batr"
-- (a key's lock), "batR" (rotation's).
CREATE OR REPLACE FUNCTION lock_rate_keys(p_keys text[]) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    k int;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1650553938, 0);
    FOR k IN SELECT DISTINCT hashtext(l) FROM unnest(p_keys) AS l WHERE l IS NOT NULL ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(1650553970, k);
    END LOOP;
END $$;
