-- What job `p_parent`'s group or map stage `p_stage` hands on once none of its members is left
-- unfinished: their outputs (each its last stage's) in member order; for a map with `"failures":
-- "continue"`, `{"results": [...], "failures": [...]}`, a failed member's result `null` and its
-- failure `{"index", "state", "error"}` (its last error), in member order. Reads the members
-- through `jobs_parent`.
--
-- Outputs adding up to more than one jsonb value holds (256 MiB) give
-- `{"gather_too_large": {"members": N, "bytes": B}}` instead, which the worker that claims the
-- stage turns into its permanent failure (Executor.swift), with the figures. Left to raise, the
-- limit failed the statement that finished the last member: the whole flush of outcomes was
-- refused, the member's own outcome then refused alone, and under `"failures": "continue"` that
-- member stayed running and was rescued and run again without end. (Its subtransaction is one per
-- group or map finished, not per member.)
CREATE OR REPLACE FUNCTION map_output(p_parent bigint, p_stage int) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path FROM CURRENT SET jit = off AS $$
BEGIN
    RETURN (
        SELECT CASE WHEN NOT (SELECT p.chain -> p_stage @> '{"failures": "continue"}' FROM jobs p WHERE p.id = p_parent)
                    THEN jsonb_agg(c.results -> -1 -> 'output' ORDER BY c.member_index)
                    ELSE jsonb_build_object(
                        'results', coalesce(jsonb_agg(CASE WHEN c.state = 'completed' THEN c.results -> -1 -> 'output'
                                                           ELSE 'null'::jsonb END ORDER BY c.member_index), '[]'),
                        'failures', coalesce(jsonb_agg(jsonb_build_object(
                                                 'index', c.member_index, 'state', c.state,
                                                 'error', c.errors -> -1 -> 'error') ORDER BY c.member_index)
                                             FILTER (WHERE c.state <> 'completed'), '[]')) END
        FROM jobs c WHERE c.parent_id = p_parent AND c.parent_stage = p_stage);
EXCEPTION WHEN program_limit_exceeded THEN
    RETURN (
        SELECT jsonb_build_object('gather_too_large', jsonb_build_object(
                   'members', count(*),
                   'bytes', coalesce(sum(octet_length((c.results -> -1 -> 'output')::text)), 0)))
        FROM jobs c WHERE c.parent_id = p_parent AND c.parent_stage = p_stage);
END $$;
