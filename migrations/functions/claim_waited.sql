-- `claim_runnable` for any task: the signature workers of the previous release call. Kept, not
-- changed in place, so that they keep working while a cluster is upgraded and an older binary's
-- `migrate` finds its function where it left it; drop it in a numbered file once no release calls
-- it. (plpgsql: its body is resolved when called, whatever order the files are applied in.)
CREATE OR REPLACE FUNCTION claim_waited(p_queue text, p_limit int, p_worker text)
RETURNS TABLE (id bigint, stage int, attempt int, chain text, input text, results text, metadata text,
               group_output text, waited float8)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
BEGIN
    RETURN QUERY SELECT * FROM claim_runnable(p_queue, p_limit, p_worker, NULL::text[]);
END $$;
