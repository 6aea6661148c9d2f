-- `apply_outcomes_for` taking lane holders of any task: the signature workers of the previous
-- release call, kept as `claim_waited`'s is.
CREATE OR REPLACE FUNCTION apply_outcomes(p_worker text, p_batch jsonb, p_queues text[], p_slots int[])
RETURNS TABLE (event text, id bigint, queue text, stage int, attempt int, chain text, input text, results text,
               metadata text, group_output text)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
BEGIN
    RETURN QUERY SELECT * FROM apply_outcomes_for(p_worker, p_batch, p_queues, p_slots, NULL::text[]);
END $$;
