-- Lane transitions are serialised per lane with a transaction-level advisory lock.
-- The first key namespaces Baton's locks (0x6261746e, "batn").
CREATE OR REPLACE FUNCTION lock_lanes(p_lanes text[]) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    k int;
BEGIN
    -- Sorted keys: two transactions locking overlapping sets cannot deadlock.
    FOR k IN SELECT DISTINCT hashtext(l) FROM unnest(p_lanes) AS l WHERE l IS NOT NULL ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(1650553966, k);
    END LOOP;
END $$;
