-- Starts up to `p_count` more runs of job `p_parent`'s map stage, those waiting in `map_elements`
-- (migrations 26, 27) in element order: an element not started yet becomes a member job fed its
-- element, at the map's first stage, in that stage's queue and lane; a failed run a retry queued
-- (`job_id`) starts again at the stage it stopped on (`restart_job`). A laned stage waits for its
-- lane, which the caller has locked (every lane of the map's stages: `map_lanes`) and admits.
-- Returns the queues of the runs started. The caller holds the parent's row (its `pending`
-- updated), so that two transactions never start the same runs.
-- New elements are found from the one after the highest started (`jobs_parent`, read backwards),
-- not from the first row of the map's range: the rows of those started are deleted, and their
-- index entries stay for as long as a held xmin horizon keeps them. Queued restarts are found
-- through `map_elements_restarts`, which only a retry writes.
-- (The fan-out in `apply_outcomes_for` starts a group's members and an unbounded map's runs the
-- same way, from the outcome's elements rather than from this table.)
CREATE OR REPLACE FUNCTION map_runs_next(p_parent bigint, p_count int) RETURNS TABLE (queue text, lane text)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
#variable_conflict use_column
DECLARE
    v_scoped boolean := scoped_rate_limits();
    v_stage int;
    v_from int;
    v_restarts bigint[];
BEGIN
    SELECT p.stage INTO v_stage FROM jobs p WHERE p.id = p_parent;
    v_from := coalesce((SELECT max(m.member_index) + 1 FROM jobs m
                        WHERE m.parent_id = p_parent AND m.parent_stage = v_stage), 0);
    WITH next AS (
        SELECT DISTINCT x.index FROM (
            (SELECT e.index FROM map_elements e
             WHERE e.parent_id = p_parent AND e.stage = v_stage AND e.job_id IS NOT NULL
             ORDER BY e.index LIMIT p_count)
            UNION ALL
            (SELECT e.index FROM map_elements e
             WHERE e.parent_id = p_parent AND e.stage = v_stage AND e.index >= v_from
             ORDER BY e.index LIMIT p_count)
        ) x ORDER BY x.index LIMIT p_count
    ), taken AS (
        DELETE FROM map_elements e
        WHERE e.parent_id = p_parent AND e.stage = v_stage AND e.index IN (SELECT n.index FROM next n)
        RETURNING e.index, e.value, e.job_id
    ), runs AS (
        -- (a statement that changes rows runs to its end whether or not the query reads it)
        INSERT INTO jobs (queue, priority, state, chain, stage_count, input, metadata, lane, lane_ready_at,
                          parent_id, parent_stage, member_index, rate_key, features, fair_key, fair_weight)
        SELECT coalesce(f.stage ->> 'queue', p.queue), p.priority,
               CASE WHEN f.stage ->> 'lane' IS NULL THEN 'available' ELSE 'waiting' END::job_state,
               f.chain, jsonb_array_length(f.chain), t.value, p.metadata, f.stage ->> 'lane', clock_timestamp(),
               p.id, p.stage, t.index,
               CASE WHEN v_scoped THEN stage_rate_key(f.stage, coalesce(f.stage ->> 'queue', p.queue))
                    ELSE coalesce(f.stage ->> 'rate', '') END,
               p.features, p.fair_key, p.fair_weight
        FROM taken t
        CROSS JOIN (SELECT * FROM jobs p WHERE p.id = p_parent) p
        CROSS JOIN LATERAL (SELECT p.chain -> p.stage -> 'stages' AS chain,
                                   p.chain -> p.stage -> 'stages' -> 0 AS stage) f
        WHERE t.job_id IS NULL
        ORDER BY t.index
    )
    SELECT array_agg(t.job_id ORDER BY t.index) FILTER (WHERE t.job_id IS NOT NULL) INTO v_restarts FROM taken t;
    RETURN QUERY SELECT DISTINCT j.queue, j.lane FROM jobs j
                 WHERE j.parent_id = p_parent AND j.parent_stage = v_stage AND j.member_index >= v_from;
    IF v_restarts IS NOT NULL THEN
        RETURN QUERY SELECT DISTINCT r.queue, r.lane FROM unnest(v_restarts) x(id), restart_job(x.id) r;
    END IF;
END $$;
