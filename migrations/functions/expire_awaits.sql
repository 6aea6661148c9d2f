-- `expire_waits` as leaders of the previous release call it: a return type cannot change in
-- place, so the wider one has a new name and this one stays until no release calls it.
CREATE OR REPLACE FUNCTION expire_awaits(p_limit int) RETURNS TABLE (id bigint, discarded boolean, watched boolean)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
BEGIN
    RETURN QUERY SELECT e.id, e.discarded, e.watched FROM expire_waits(p_limit) e;
END $$;
