-- Enqueue a batch of jobs in one call. A job whose first stage names a lane enters it (holder or
-- waiting); a repeated idempotency key (from an earlier call or earlier in this batch) yields the
-- job that holds it, and so does a unique key held by a job in one of its `unique_states`. Returns (id, queue, state, inserted, run_at, created_at) in input order, so
-- that the control plane answers without reading the jobs back; new jobs outside lanes are
-- answered from the insert's RETURNING.
--   p_jobs: [{"queue", "priority", "run_at"?, "chain", "input", "metadata", "key"?, "owner"?,
--             "key_owners"?, "unique_key"?, "unique_states"?, "home_queue"?, "no_tags"?, "features"?,
--             "fair_key"?, "fair_weight"?}, …]
-- `fair_key`: the key (a tenant) the job's stages take turns under in their queues (migration 28);
-- each queue the job or a stage of its chain names becomes fair here, if it was not.
-- `fair_weight`: its stages' weight under their key there (NULL: 1).
-- A job that names no key entering a queue that derives them (`fair_queues.key_from`) takes the
-- key its metadata or input holds there (`fair_key_of`, which refuses the batch with BT422 when it
-- is not text): a look-up for the jobs entering such a queue only.
-- `features`: the chain features the job's chain uses (`sub-chain`: a group member of several
-- stages); only workers that read them all are given the job (migration 25). A caller that
-- writes such a chain names them, as the Swift store does.
-- `no_tags`: the caller has seen that the job has no metadata and no stage with args, so nothing to
-- find it by (`tags_of`) need be looked for (a caller of the version before sends none: then it is).
-- `queue` is the first stage's (its own, when it names one; then `home_queue` is the job's).
-- A batch of at most 100 jobs wakes workers in the same transaction: a NOTIFY `q:<queue>` on
-- `<schema>_events` for each queue that gained available jobs, delivered at commit, so that the
-- wake-up is on its way before the caller even learns of the commit (no statement of its own, no
-- round trip after it). A transaction that notifies holds a cluster-wide lock through its commit's
-- WAL flush: larger batches, whose latency matters less than their throughput, are left to the
-- caller to announce after the commit (`Store.wakesInTransaction`), so that concurrent ones
-- are not serialised.
-- `owner` is a fingerprint of the API token that enqueued the job. With `key_owners` (the
-- caller's fingerprints, under every key; `"own_keys": true` from a control plane of the version
-- before, meaning `owner` alone), a key that names a job of no such owner refuses the whole batch
-- (SQLSTATE BT409, DETAIL the job's
-- index in the batch): a caller that may see only its own jobs learns nothing of another's, and
-- the check is in the same transaction as the insert, so a race between two owners cannot slip
-- past it.
CREATE OR REPLACE FUNCTION enqueue(p_jobs jsonb) RETURNS TABLE (id bigint, queue text, state job_state, inserted boolean, run_at timestamptz,
                                           created_at timestamptz)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
DECLARE
    v_ids bigint[];
    v_new boolean[];
    v_lanes text[];
    v_queues text[];
    v_states job_state[];
    v_run_at timestamptz[];
    v_created_at timestamptz[];
    v_taken bigint;
    -- Whether a job may have something to be found by (`tags_of`).
    v_tagged boolean;
    -- Whether a job names a fairness key.
    v_fair boolean;
    -- The queues that derive fairness keys from what jobs carry, and from where (mostly none).
    v_derive jsonb := (SELECT jsonb_object_agg(f.queue, f.key_from) FROM fair_queues f WHERE f.key_from IS NOT NULL);
    -- Whether a limit binds a whole queue or lane: then each stage's key is looked up.
    v_scoped boolean := scoped_rate_limits();
BEGIN
    -- Lock the lanes entered before inserting, so that their entry time (taken after the lock)
    -- orders them the way the lane lock serialises them.
    SELECT array_agg(DISTINCT l) FILTER (WHERE l IS NOT NULL), bool_or(t), bool_or(f) INTO v_lanes, v_tagged, v_fair
    FROM (
        SELECT j -> 'chain' -> 0 ->> 'lane' AS l, (j -> 'no_tags') IS DISTINCT FROM 'true' AS t, j ? 'fair_key' AS f
        FROM jsonb_array_elements(p_jobs) j
    ) x;
    IF v_lanes IS NOT NULL THEN
        PERFORM lock_lanes(v_lanes);
    END IF;
    -- Queues that jobs with a key enter become fair before their rows are written (the trigger
    -- that writes them reads `fair_queues`); a statement only for a batch that names a key.
    IF v_fair THEN
        INSERT INTO fair_queues (queue)
        SELECT DISTINCT q FROM (
            SELECT coalesce(j ->> 'queue', 'default') AS q FROM jsonb_array_elements(p_jobs) j WHERE j ? 'fair_key'
            UNION ALL
            SELECT s #>> '{}' FROM jsonb_array_elements(p_jobs) j, jsonb_path_query(j -> 'chain', 'lax $.**.queue') s
            WHERE j ? 'fair_key' AND jsonb_typeof(s) = 'string'
        ) x
        WHERE NOT EXISTS (SELECT 1 FROM fair_queues f WHERE f.queue = x.q)
        ON CONFLICT DO NOTHING;
    END IF;

    -- Ids are drawn before the insert so that each input row knows its job without relying on
    -- the order of RETURNING.
    -- Entry times are taken here too, in batch order, for both inserts below.
    WITH input AS MATERIALIZED (
        SELECT new_job_id() AS new_id, clock_timestamp() AS ready_at, i.*,
               CASE WHEN v_scoped THEN stage_rate_key(i.chain -> 0, coalesce(i.queue, 'default'))
                    ELSE coalesce(i.chain -> 0 ->> 'rate', '') END AS rate_key,
               CASE WHEN i.fair_key IS NULL AND v_derive ? coalesce(i.home_queue, i.queue, 'default')
                    THEN fair_key_of(coalesce(i.home_queue, i.queue, 'default'),
                                     v_derive ->> coalesce(i.home_queue, i.queue, 'default'), i.metadata, i.input,
                                     i.ord::int - 1)
                    ELSE i.fair_key
               END AS job_key
        FROM ROWS FROM (jsonb_to_recordset(p_jobs)
                AS (queue text, priority smallint, run_at timestamptz, chain jsonb, input jsonb, metadata jsonb,
                    key text, owner text, unique_key text, unique_states job_state[], home_queue text,
                    features text[], fair_key text, fair_weight float8))
            WITH ORDINALITY AS i(queue, priority, run_at, chain, input, metadata, key, owner, unique_key,
                                 unique_states, home_queue, features, fair_key, fair_weight, ord)
    ), plain AS (
        -- Jobs without a key of either kind: a plain insert. Naming an arbiter, even an index a
        -- NULL key never enters, made each row a speculative insertion: a lock taken and released
        -- and a confirmation record in the WAL per job (docs/benchmarks.md#what-the-wal-holds).
        INSERT INTO jobs (id, queue, priority, state, run_at, chain, stage_count, input, metadata, lane,
                          lane_ready_at, enqueued_by, home_queue, rate_key, features, fair_key, fair_weight)
        SELECT i.new_id, coalesce(i.queue, 'default'), coalesce(i.priority, 0),
               CASE WHEN i.run_at > now() THEN 'scheduled'
                    WHEN i.chain -> 0 ->> 'lane' IS NOT NULL THEN 'waiting'
                    ELSE 'available' END::job_state,
               coalesce(i.run_at, now()), i.chain, jsonb_array_length(i.chain), coalesce(i.input, 'null'),
               coalesce(i.metadata, '{}'), i.chain -> 0 ->> 'lane', i.ready_at, i.owner, i.home_queue, i.rate_key,
               nullif(i.features, '{}'), i.job_key, i.fair_weight
        FROM input i WHERE i.unique_key IS NULL AND i.key IS NULL ORDER BY i.ord
        RETURNING jobs.id, jobs.queue, jobs.state, jobs.run_at, jobs.created_at
    ), keyed AS (
        -- Jobs with an idempotency key, a uniqueness rule or both: every unique index is an
        -- arbiter (only those two can conflict on a new job).
        INSERT INTO jobs (id, queue, priority, state, run_at, chain, stage_count, input, metadata,
                          idempotency_key, lane, lane_ready_at, enqueued_by, unique_key, unique_states, home_queue,
                          rate_key, features, fair_key, fair_weight)
        SELECT i.new_id, coalesce(i.queue, 'default'), coalesce(i.priority, 0),
               CASE WHEN i.run_at > now() THEN 'scheduled'
                    WHEN i.chain -> 0 ->> 'lane' IS NOT NULL THEN 'waiting'
                    ELSE 'available' END::job_state,
               coalesce(i.run_at, now()), i.chain, jsonb_array_length(i.chain), coalesce(i.input, 'null'),
               coalesce(i.metadata, '{}'), i.key, i.chain -> 0 ->> 'lane', i.ready_at, i.owner, i.unique_key,
               i.unique_states, i.home_queue, i.rate_key, nullif(i.features, '{}'), i.job_key, i.fair_weight
        FROM input i WHERE i.unique_key IS NOT NULL OR i.key IS NOT NULL ORDER BY i.ord
        ON CONFLICT DO NOTHING
        RETURNING jobs.id, jobs.queue, jobs.state, jobs.run_at, jobs.created_at
    ), ins AS (
        SELECT * FROM plain UNION ALL SELECT * FROM keyed
    )
    SELECT array_agg(ins.id ORDER BY i.ord), array_agg(ins.id IS NOT NULL ORDER BY i.ord),
           array_agg(ins.queue ORDER BY i.ord), array_agg(ins.state ORDER BY i.ord),
           array_agg(ins.run_at ORDER BY i.ord), array_agg(ins.created_at ORDER BY i.ord)
    INTO v_ids, v_new, v_queues, v_states, v_run_at, v_created_at
    FROM input i LEFT JOIN ins ON ins.id = i.new_id;

    -- What each new job is found by (`tags_of`), written once, here, and deleted with the job; a
    -- statement only for a batch that may have any.
    IF v_tagged THEN
        INSERT INTO job_tags (name, value, job_id)
        SELECT DISTINCT left(t.name, 120), left(t.value, 200), v.id
        FROM unnest(v_ids, v_new) WITH ORDINALITY AS v(id, new, ord)
        CROSS JOIN LATERAL tags_of(p_jobs -> (v.ord::int - 1) -> 'chain', p_jobs -> (v.ord::int - 1) -> 'metadata') t
        WHERE v.new AND (p_jobs -> (v.ord::int - 1) -> 'no_tags') IS DISTINCT FROM 'true';
    END IF;

    -- the common case (new jobs, no lanes) answers from what the insert returned.
    IF array_position(v_new, false) IS NULL AND v_lanes IS NULL THEN
        PERFORM pg_notify(current_schema() || '_events', 'q:' || q)
        FROM (SELECT DISTINCT u.q FROM unnest(v_queues, v_states) AS u(q, s) WHERE u.s = 'available') x
        WHERE jsonb_array_length(p_jobs) <= 100;
        RETURN QUERY SELECT * FROM unnest(v_ids, v_queues, v_states, v_new, v_run_at, v_created_at);
        RETURN;
    END IF;

    IF array_position(v_new, false) IS NOT NULL THEN
        -- A new statement, a new snapshot: it sees the job that won the key, even if another
        -- transaction committed it while this one waited. Each look-up is its index's.
        SELECT array_agg(coalesce(v.id,
                   (SELECT j.id FROM jobs j WHERE j.idempotency_key = v.key),
                   (SELECT j.id FROM jobs j WHERE j.unique_key = v.unique_key AND j.state = ANY (j.unique_states)))
               ORDER BY v.ord) INTO v_ids
        FROM unnest(v_ids, ARRAY(SELECT k ->> 'key' FROM jsonb_array_elements(p_jobs) k),
                    ARRAY(SELECT k ->> 'unique_key' FROM jsonb_array_elements(p_jobs) k))
            WITH ORDINALITY AS v(id, key, unique_key, ord);
        SELECT min(v.ord) INTO v_taken
        FROM unnest(v_ids, v_new) WITH ORDINALITY AS v(id, new, ord)
        JOIN jobs j ON j.id = v.id
        WHERE NOT v.new AND (
            -- `key_owners`: the caller's fingerprints under each key (a rotated key keeps the
            -- jobs stored under the old one its caller's).
            NOT coalesce(j.enqueued_by = ANY (ARRAY(
                    SELECT jsonb_array_elements_text(p_jobs -> (v.ord::int - 1) -> 'key_owners'))), false)
            AND p_jobs -> (v.ord::int - 1) ? 'key_owners'
            -- `own_keys` and `owner`: as a control plane of the version before sends it.
            OR (p_jobs -> (v.ord::int - 1) ->> 'own_keys')::boolean
               AND j.enqueued_by IS DISTINCT FROM p_jobs -> (v.ord::int - 1) ->> 'owner');
        IF v_taken IS NOT NULL THEN
            RAISE EXCEPTION 'the idempotency or unique key of job % names another owner''s job', v_taken - 1
                USING ERRCODE = 'BT409', DETAIL = (v_taken - 1)::text;
        END IF;
    END IF;

    IF v_lanes IS NOT NULL THEN
        PERFORM promote_lanes(v_lanes);
    END IF;

    -- New jobs available now, lane holders promoted just now among them.
    PERFORM pg_notify(current_schema() || '_events', 'q:' || q)
    FROM (SELECT DISTINCT j.queue AS q FROM unnest(v_ids, v_new) AS v(id, new) JOIN jobs j ON j.id = v.id
          WHERE v.new AND j.state = 'available') x
    WHERE jsonb_array_length(p_jobs) <= 100;

    -- A row per job given, in order: a job a key named and that was deleted meanwhile (an instant
    -- between the insert and the look-up) comes back with a NULL id, so that the caller that sent
    -- it, and only that one, can be told to try again.
    RETURN QUERY
    SELECT j.id, j.queue, j.state, v.new, j.run_at, j.created_at
    FROM unnest(v_ids, v_new) WITH ORDINALITY AS v(id, new, ord) LEFT JOIN jobs j ON j.id = v.id
    ORDER BY v.ord;
END $$;
