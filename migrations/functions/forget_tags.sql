-- Deletes the `job_tags` rows of deleted top-level jobs, found by what they held (`tags_of`) in
-- `job_tags_pkey`: the table has no index by job. Called by every statement that deletes jobs, with
-- the rows it deleted. (PL/pgSQL: an SQL function's body is checked when it is created, before
-- `tags_of`, which comes after it, exists.)
CREATE OR REPLACE FUNCTION forget_tags(p_ids bigint[], p_chains jsonb[], p_metadata jsonb[]) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
BEGIN
    DELETE FROM job_tags t
    USING unnest(p_ids, p_chains, p_metadata) g(id, chain, metadata) CROSS JOIN LATERAL tags_of(g.chain, g.metadata) x
    WHERE t.name = left(x.name, 120) AND t.value = left(x.value, 200) AND t.job_id = g.id;
END $$;
