-- A group fails when one of its members is discarded or cancelled: the parent is discarded with
-- the member's last error, and so on up through nested groups. Members still running are left to
-- finish; the parent ignores them. Returns the watched parents that finished.
CREATE OR REPLACE FUNCTION fail_parents(p_members bigint[], p_worker text) RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    v_members bigint[] := p_members;
BEGIN
    WHILE v_members IS NOT NULL LOOP
        WITH failed AS (
            UPDATE jobs p SET state = 'discarded', finished_at = now(), worker_id = NULL,
                errors = p.errors || jsonb_build_array(jsonb_build_object(
                    'stage', p.stage, 'attempt', p.attempt, 'at', now(), 'worker', p_worker,
                    'error', 'group member ' || c.member_index || ' was ' || c.state
                             || coalesce(': ' || (c.errors -> -1 ->> 'error'), '')))
            FROM (SELECT DISTINCT ON (m.parent_id) m.parent_id, m.member_index, m.state, m.errors
                  FROM jobs m WHERE m.id = ANY(v_members) AND m.parent_id IS NOT NULL
                  ORDER BY m.parent_id, m.member_index) c
            WHERE p.id = c.parent_id AND p.state = 'waiting' AND p.pending IS NOT NULL
            RETURNING p.id, p.watched
        ), watched AS (
            SELECT f.id FROM failed f WHERE f.watched
        )
        SELECT (SELECT array_agg(f.id) FROM failed f), (SELECT array_agg(w.id) FROM watched w)
        INTO v_members, p_members;
        IF p_members IS NOT NULL THEN
            RETURN QUERY SELECT unnest(p_members);
        END IF;
    END LOOP;
END $$;
