-- Whether any group member of the job, at any depth, has not finished. A job with such members
-- is neither retried nor deleted: deleting them (by cascade) would skip their lanes' hand-off.
-- Walks `jobs_parent`.
CREATE OR REPLACE FUNCTION unfinished_members(p_id bigint) RETURNS boolean
LANGUAGE sql STABLE SET search_path FROM CURRENT AS $$
    WITH RECURSIVE tree AS (
        SELECT m.id, m.state FROM jobs m WHERE m.parent_id = p_id
        UNION ALL
        SELECT c.id, c.state FROM jobs c JOIN tree t ON c.parent_id = t.id
    )
    SELECT EXISTS (SELECT 1 FROM tree WHERE tree.state NOT IN ('completed', 'discarded', 'cancelled'))
$$;
