-- `claim_for` without its last row (the wait for a token): the signature workers of earlier
-- releases call. Kept, not changed in place, so that they keep working while a cluster is
-- upgraded; drop it in a numbered file once no release calls it.
CREATE OR REPLACE FUNCTION claim_runnable(p_queue text, p_limit int, p_worker text, p_tasks text[])
RETURNS TABLE (id bigint, stage int, attempt int, chain text, input text, results text, metadata text,
               group_output text, waited float8)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
BEGIN
    RETURN QUERY SELECT * FROM claim_for(p_queue, p_limit, p_worker, p_tasks) c WHERE c.id IS NOT NULL;
END $$;
