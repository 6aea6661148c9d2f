-- The lanes of every stage, at any depth, of the bounded maps (`concurrency`) among `p_parents`
-- (the parents of runs that end): a run that ends may start the next element or a run a retry
-- queued, at a stage in any of them (`map_runs_next`), which the caller locks first, as a worker
-- locks every lane it touches before any row, and admits after. (A `lane` inside a stage's `args`
-- is taken too: one more lane locked and looked at, no harm.)
-- PL/pgSQL, whose plan a session keeps: as an SQL function (a set-returning one, with settings of
-- its own, is never inlined) it was planned afresh at each flush of a map's runs, which cost more
-- than the look-up (docs/benchmarks.md#issue-48-the-flush-of-a-maps-runs-2026-12-07-night).
CREATE OR REPLACE FUNCTION map_lanes(p_parents bigint[]) RETURNS SETOF text
LANGUAGE plpgsql STABLE SET search_path FROM CURRENT SET jit = off AS $$
BEGIN
    RETURN QUERY
    SELECT DISTINCT l #>> '{}'
    FROM jobs p, jsonb_path_query(p.chain -> p.stage -> 'stages', 'lax $.**.lane') l
    WHERE p.id = ANY (p_parents) AND p.chain -> p.stage ? 'concurrency';
END $$;
