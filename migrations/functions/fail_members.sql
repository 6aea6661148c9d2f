-- Members (`p_members`) that failed for good, discarded or cancelled, tell the jobs waiting for
-- them, and so on up through nested groups and maps. A group, or a map under its default policy
-- (`"failures": "all"`), fails: its job is discarded with the first such member's last error;
-- members still running are left to finish (it ignores them), and a bounded map's elements not
-- started stay so (a retry starts them). A map with `"failures": "continue"` counts them
-- (`failed`, migration 27) and goes on: as many more runs start as failed (with a bound), and
-- once none is left unfinished it hands on its results and failures (`map_output`); with
-- `stop_after` it fails at that many failures. Returns ('finished', id) for each failed job
-- someone awaits and ('wake', queue) for the queues of jobs made ready. The caller holds the
-- lanes of the maps' stages (`map_lanes`) and admits them after.
CREATE OR REPLACE FUNCTION fail_members(p_members bigint[], p_worker text)
RETURNS TABLE (event text, id bigint, queue text)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
#variable_conflict use_column
DECLARE
    v_members bigint[] := p_members;
    v_going bigint[];
    v_counts int[];
BEGIN
    WHILE v_members IS NOT NULL LOOP
        -- Maps that go on past failures: counted, and those at their `stop_after` fail below.
        WITH f AS (
            SELECT m.parent_id, count(*)::int AS n FROM jobs m
            WHERE m.id = ANY (v_members) AND m.parent_id IS NOT NULL GROUP BY m.parent_id
        ), counted AS (
            UPDATE jobs p SET pending = p.pending - f.n, failed = coalesce(p.failed, 0) + f.n
            FROM f
            WHERE p.id = f.parent_id AND p.state = 'waiting' AND p.pending IS NOT NULL
              AND p.chain -> p.stage ->> 'failures' = 'continue'
            RETURNING p.id, f.n, p.failed >= coalesce((p.chain -> p.stage ->> 'stop_after')::int, 2147483647) AS stop
        )
        SELECT array_agg(c.id) FILTER (WHERE NOT c.stop), array_agg(c.n) FILTER (WHERE NOT c.stop)
        INTO v_going, v_counts FROM counted c;

        -- The rest fail, each with the error of its first failed member here.
        WITH failed AS (
            UPDATE jobs p SET state = 'discarded', finished_at = now(), worker_id = NULL,
                errors = p.errors || jsonb_build_array(jsonb_build_object(
                    'stage', p.stage, 'attempt', p.attempt, 'at', now(), 'worker', p_worker,
                    'error', CASE WHEN p.failed IS NOT NULL
                                  THEN p.failed || ' runs failed (stop after ' || (p.chain -> p.stage ->> 'stop_after')
                                       || '); '
                                  ELSE '' END
                             || CASE WHEN p.chain -> p.stage ? 'map' THEN 'map element ' ELSE 'group member ' END
                             || c.member_index || ' was ' || c.state
                             || coalesce(': ' || (c.errors -> -1 ->> 'error'), '')))
            FROM (SELECT DISTINCT ON (m.parent_id) m.parent_id, m.member_index, m.state, m.errors
                  FROM jobs m WHERE m.id = ANY (v_members) AND m.parent_id IS NOT NULL
                  ORDER BY m.parent_id, m.member_index) c
            WHERE p.id = c.parent_id AND p.state = 'waiting' AND p.pending IS NOT NULL
              AND NOT (p.id = ANY (coalesce(v_going, '{}')))
            RETURNING p.id, p.watched
        ), watched AS (
            SELECT f.id FROM failed f WHERE f.watched
        )
        SELECT (SELECT array_agg(f.id) FROM failed f), (SELECT array_agg(w.id) FROM watched w)
        INTO v_members, p_members;
        IF p_members IS NOT NULL THEN
            RETURN QUERY SELECT 'finished', w, NULL::text FROM unnest(p_members) w;
        END IF;

        IF v_going IS NOT NULL THEN
            -- A bounded map starts as many more runs as failed...
            RETURN QUERY
            SELECT DISTINCT 'wake', NULL::bigint, r.queue
            FROM unnest(v_going, v_counts) g(id, n)
            JOIN jobs p ON p.id = g.id
            CROSS JOIN LATERAL map_runs_next(p.id, g.n) r
            WHERE p.chain -> p.stage ? 'concurrency';
            -- ...and one with none left unfinished hands on what its runs gave.
            RETURN QUERY
            UPDATE jobs p SET state = 'available', run_at = now(), pending = NULL, failed = NULL,
                group_output = map_output(p.id, p.stage)
            WHERE p.id = ANY (v_going) AND p.state = 'waiting' AND p.pending = 0
            RETURNING 'wake', NULL::bigint, p.queue;
        END IF;
    END LOOP;
END $$;
