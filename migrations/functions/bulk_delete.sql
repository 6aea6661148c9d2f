-- Deletes each finished job of `p_ids` (not a group member, none of its members still running),
-- with its members and tags; returns the ids deleted. One batch (at most a thousand, picked by the caller's
-- filter) per call and per transaction; finished jobs hold no lane.
CREATE OR REPLACE FUNCTION bulk_delete(p_ids bigint[]) RETURNS TABLE (id bigint)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH gone AS (
        DELETE FROM jobs j
        WHERE j.id = ANY(p_ids) AND j.state IN ('completed', 'discarded', 'cancelled') AND j.parent_id IS NULL
          AND NOT unfinished_members(j.id)
        RETURNING j.id, j.chain, j.metadata
    ), untagged AS (
        SELECT forget_tags(array_agg(g.id), array_agg(g.chain), array_agg(g.metadata)) FROM gone g
    )
    SELECT g.id FROM gone g, untagged;
END $$;
