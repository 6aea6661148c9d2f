-- The rate limit key of a stage about to become current in `p_queue`: the key it names (`"rate"`);
-- else, for a task stage, `lane:<its lane>` when a limit is set on that key or on a prefix of it
-- (`lane:customer-*`), else `queue:<p_queue>` likewise; else '' (no limit). The lane is the more
-- specific, so it wins: a stage counts against one key. Resolved when the stage becomes current
-- (enqueue, advance, hop, fan-out) and again for waiting stages when such a limit is set or deleted
-- (`rekey_scoped_stages`); the claim reads the column, never this.
-- Callers that may run per stage call it only when `scoped_rate_limits()` says one exists.
CREATE OR REPLACE FUNCTION stage_rate_key(p_stage jsonb, p_queue text) RETURNS text
LANGUAGE sql STABLE SET search_path FROM CURRENT AS $$
    SELECT coalesce(
        p_stage ->> 'rate',
        (SELECT s.key FROM (VALUES (1, 'lane:' || (p_stage ->> 'lane')), (2, 'queue:' || p_queue)) AS s(rank, key)
         WHERE p_stage ? 'task' AND s.key IS NOT NULL
           AND EXISTS (SELECT 1 FROM rate_limits r
                       WHERE (starts_with(r.key, 'queue:') OR starts_with(r.key, 'lane:'))
                         AND (r.key = s.key OR (right(r.key, 1) = '*' AND starts_with(s.key, left(r.key, -1)))))
         ORDER BY s.rank LIMIT 1),
        '')
$$;

-- Whether any limit is set on a whole queue or lane (one probe of `rate_limits_scoped`).
-- PL/pgSQL, whose plan a session keeps: as an SQL function called from PL/pgSQL (each enqueue and
-- each flush) it was planned on every call, which cost many times what it runs in
-- (docs/benchmarks.md#planned-at-every-call).
CREATE OR REPLACE FUNCTION scoped_rate_limits() RETURNS boolean
LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM rate_limits WHERE starts_with(key, 'queue:') OR starts_with(key, 'lane:'));
END $$;

-- After a limit on `p_key` (`queue:…` or `lane:…`, maybe a prefix) was set or deleted: the stages
-- of that queue or lane that name no key and wait to start (available, scheduled, retryable, or
-- waiting for their lane or a signal) take the key they resolve to now, so that a new limit binds
-- a backlog already queued, and a deleted one frees it. Running stages keep theirs.
CREATE OR REPLACE FUNCTION rekey_scoped_stages(p_key text) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
DECLARE
    v_scope text := split_part(p_key, ':', 1);
    v_name text := substr(p_key, length(v_scope) + 2);
    v_prefix boolean := right(p_key, 1) = '*';
BEGIN
    IF v_scope NOT IN ('queue', 'lane') THEN
        RETURN;
    END IF;
    IF v_prefix THEN
        v_name := left(v_name, -1);
    END IF;
    UPDATE jobs j SET rate_key = k.key
    FROM (SELECT n.id, stage_rate_key(n.chain -> n.stage, n.queue) AS key
          FROM jobs n CROSS JOIN LATERAL (SELECT CASE v_scope WHEN 'queue' THEN n.queue ELSE n.lane END AS name) s
          WHERE n.state IN ('available', 'scheduled', 'retryable', 'waiting')
            AND NOT (n.chain -> n.stage ? 'rate')
            AND CASE WHEN v_prefix THEN starts_with(s.name, v_name) ELSE s.name = v_name END) k
    WHERE j.id = k.id AND j.rate_key <> k.key;
END $$;
