-- Two counts of claims per fairness key (`queue_minutes.fair_starts`, migration 28) added
-- together, keeping the 20 keys with the most (then by key): a minute's row stays small however
-- many tenants a queue has, and the keys an operator looks for, the busiest, are the ones kept.
-- NULL adds nothing.
CREATE OR REPLACE FUNCTION fair_starts_added(p_a jsonb, p_b jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE SET jit = off AS $$
    SELECT CASE WHEN p_a IS NULL THEN p_b WHEN p_b IS NULL THEN p_a ELSE (
        SELECT jsonb_object_agg(t.k, t.n) FROM (
            SELECT x.k, sum(x.v::bigint) AS n
            FROM (SELECT * FROM jsonb_each_text(p_a) UNION ALL SELECT * FROM jsonb_each_text(p_b)) x(k, v)
            GROUP BY x.k ORDER BY n DESC, x.k LIMIT 20) t)
    END
$$;
