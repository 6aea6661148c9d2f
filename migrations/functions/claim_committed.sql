-- `claim_for`, committed before it answers: a procedure that claims, COMMITs, and only then hands
-- back what it claimed (as arrays, one element per job: a procedure answers one row). The row a
-- caller receives proves the claim is committed, so no commit check (a second round trip, see
-- PostgresConnection+CommitCheck.swift) follows it: a pickup is one round trip shorter.
-- `next_token_s`: when a rate limit key ran out with stages still waiting, seconds until the
-- first of them has a token (claim_for's id-NULL row); else NULL. `results` and `group_outputs`
-- hold '' for NULL (array elements are decoded without NULLs).
-- A procedure that commits may not carry `SET search_path`: its schema is written into its body
-- when it is created, and CALL must not run inside a transaction block.
DO $create$ BEGIN EXECUTE format($procedure$
CREATE OR REPLACE PROCEDURE %1$I.claim_committed(
    p_queue text, p_limit int, p_worker text, p_tasks text[],
    INOUT ids bigint[], INOUT stages int[], INOUT attempts int[], INOUT chains text[], INOUT inputs text[],
    INOUT results text[], INOUT metadata text[], INOUT group_outputs text[], INOUT waited float8[],
    INOUT next_token_s float8)
LANGUAGE plpgsql AS $body$
BEGIN
    SELECT coalesce(array_agg(c.id) FILTER (WHERE c.id IS NOT NULL), '{}'),
           coalesce(array_agg(c.stage) FILTER (WHERE c.id IS NOT NULL), '{}'),
           coalesce(array_agg(c.attempt) FILTER (WHERE c.id IS NOT NULL), '{}'),
           coalesce(array_agg(c.chain) FILTER (WHERE c.id IS NOT NULL), '{}'),
           coalesce(array_agg(c.input) FILTER (WHERE c.id IS NOT NULL), '{}'),
           coalesce(array_agg(coalesce(c.results, '')) FILTER (WHERE c.id IS NOT NULL), '{}'),
           coalesce(array_agg(c.metadata) FILTER (WHERE c.id IS NOT NULL), '{}'),
           coalesce(array_agg(coalesce(c.group_output, '')) FILTER (WHERE c.id IS NOT NULL), '{}'),
           coalesce(array_agg(c.waited) FILTER (WHERE c.id IS NOT NULL), '{}'),
           max(c.waited) FILTER (WHERE c.id IS NULL)
    INTO ids, stages, attempts, chains, inputs, results, metadata, group_outputs, waited, next_token_s
    FROM %1$I.claim_for(p_queue, p_limit, p_worker, p_tasks) c;
    COMMIT;
END $body$
$procedure$, current_schema());
END $create$;
