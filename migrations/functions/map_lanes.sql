-- The lanes of every stage, at any depth, of the bounded maps (`concurrency`) whose runs are among
-- `p_members`: a run that ends there may start the next element or a run a retry queued, at a
-- stage in any of them (`map_runs_next`), which the caller locks first, as a worker locks every
-- lane it touches before any row, and admits after. (A `lane` inside a stage's `args` is taken
-- too: one more lane locked and looked at, no harm.)
CREATE OR REPLACE FUNCTION map_lanes(p_members bigint[]) RETURNS SETOF text
LANGUAGE sql STABLE SET search_path FROM CURRENT SET jit = off AS $$
    SELECT DISTINCT l #>> '{}'
    FROM jobs p, jsonb_path_query(p.chain -> p.stage -> 'stages', 'lax $.**.lane') l
    -- (the parents through an array: a join of the runs' rows with theirs can read `jobs_parent`
    -- whole, which a plan made while it was small prefers)
    WHERE p.id = ANY (ARRAY(SELECT m.parent_id FROM jobs m WHERE m.id = ANY (p_members)))
      AND p.chain -> p.stage ? 'concurrency'
$$;
