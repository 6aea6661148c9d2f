-- `apply_outcomes_for`, committed before it answers (as `claim_committed` does for claims): the row
-- a caller receives proves the outcomes are committed, so no commit check follows them and a hop
-- is one round trip shorter. One element per event in each array; NULLs are given as 0 (ids,
-- stages, attempts) or '' (text), since array elements are decoded without NULLs.
DO $create$ BEGIN EXECUTE format($procedure$
CREATE OR REPLACE PROCEDURE %1$I.apply_outcomes_committed(
    p_worker text, p_batch jsonb, p_queues text[], p_slots int[], p_tasks text[],
    INOUT events text[], INOUT ids bigint[], INOUT queues text[], INOUT stages int[], INOUT attempts int[],
    INOUT chains text[], INOUT inputs text[], INOUT results text[], INOUT metadata text[],
    INOUT group_outputs text[])
LANGUAGE plpgsql AS $body$
BEGIN
    SELECT coalesce(array_agg(o.event), '{}'), coalesce(array_agg(coalesce(o.id, 0)), '{}'),
           coalesce(array_agg(coalesce(o.queue, '')), '{}'), coalesce(array_agg(coalesce(o.stage, 0)), '{}'),
           coalesce(array_agg(coalesce(o.attempt, 0)), '{}'), coalesce(array_agg(coalesce(o.chain, '')), '{}'),
           coalesce(array_agg(coalesce(o.input, '')), '{}'), coalesce(array_agg(coalesce(o.results, '')), '{}'),
           coalesce(array_agg(coalesce(o.metadata, '')), '{}'), coalesce(array_agg(coalesce(o.group_output, '')), '{}')
    INTO events, ids, queues, stages, attempts, chains, inputs, results, metadata, group_outputs
    FROM %1$I.apply_outcomes_for(p_worker, p_batch, p_queues, p_slots, p_tasks) o;
    COMMIT;
END $body$
$procedure$, current_schema());
END $create$;
