-- Starts the runs of job `p_parent`'s map stage that wait in `map_elements` (migration 26) with
-- element indexes `p_from` … `p_from + p_count - 1`: each becomes a member job fed its element,
-- at the map's first stage, in that stage's queue and lane (a laned one waits for its lane, which
-- the caller has locked and admits). Returns the queues of the runs started. The caller holds
-- the parent's row (its `pending` updated), so that two transactions never start the same runs.
-- (The fan-out in `apply_outcomes_for` starts a group's members and an unbounded map's runs the
-- same way, from the outcome's elements rather than from this table.)
CREATE OR REPLACE FUNCTION map_runs_start(p_parent bigint, p_from int, p_count int) RETURNS SETOF text
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
DECLARE
    v_scoped boolean := scoped_rate_limits();
BEGIN
    RETURN QUERY
    WITH parent AS (
        SELECT p.* FROM jobs p WHERE p.id = p_parent
    ), taken AS (
        DELETE FROM map_elements e USING parent p
        WHERE e.parent_id = p.id AND e.stage = p.stage AND e.index >= p_from AND e.index < p_from + p_count
        RETURNING e.index, e.value
    ), runs AS (
        INSERT INTO jobs (queue, priority, state, chain, stage_count, input, metadata, lane, lane_ready_at,
                          parent_id, parent_stage, member_index, rate_key, features)
        SELECT coalesce(f.stage ->> 'queue', p.queue), p.priority,
               CASE WHEN f.stage ->> 'lane' IS NULL THEN 'available' ELSE 'waiting' END::job_state,
               f.chain, jsonb_array_length(f.chain), t.value, p.metadata, f.stage ->> 'lane', clock_timestamp(),
               p.id, p.stage, t.index,
               CASE WHEN v_scoped THEN stage_rate_key(f.stage, coalesce(f.stage ->> 'queue', p.queue))
                    ELSE coalesce(f.stage ->> 'rate', '') END,
               p.features
        FROM taken t CROSS JOIN parent p
        CROSS JOIN LATERAL (SELECT p.chain -> p.stage -> 'stages' AS chain,
                                   p.chain -> p.stage -> 'stages' -> 0 AS stage) f
        ORDER BY t.index
        RETURNING jobs.queue
    )
    SELECT DISTINCT r.queue FROM runs r;
END $$;
