-- Baton schema, version 1: jobs, lanes, workers.
--
-- Names are unqualified: `baton migrate` runs this file with `search_path` set to Baton's schema
-- (`baton` unless configured). To apply it by hand:
--   psql "$DATABASE_URL" -c 'CREATE SCHEMA IF NOT EXISTS baton' -c 'SET search_path TO baton' -f 0001_jobs.sql
-- Functions pin the search_path they were created with (`SET search_path FROM CURRENT`).

CREATE TYPE job_state AS ENUM (
    'scheduled', 'available', 'running', 'retryable', 'waiting', 'completed', 'discarded', 'cancelled'
);

-- One row per job. The chain is stored as written; `stage` is the index of the current stage and
-- `results` holds one entry per finished stage: {"output", "attempts", "started_at", "finished_at"}.
CREATE TABLE jobs (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue           text        NOT NULL,
    priority        smallint    NOT NULL DEFAULT 0,
    state           job_state   NOT NULL,
    run_at          timestamptz NOT NULL DEFAULT now(),
    chain           jsonb       NOT NULL,
    stage_count     int         NOT NULL,
    stage           int         NOT NULL DEFAULT 0,
    -- attempts made at the current stage (the claim increments it)
    attempt         int         NOT NULL DEFAULT 0,
    input           jsonb       NOT NULL DEFAULT 'null',
    results         jsonb       NOT NULL DEFAULT '[]',
    -- every failed attempt: {"stage", "attempt", "at", "worker", "error"}
    errors          jsonb       NOT NULL DEFAULT '[]',
    metadata        jsonb       NOT NULL DEFAULT '{}',
    idempotency_key text,
    -- lane of the current stage (NULL: background); kept after the job finishes for inspection
    lane            text,
    -- when the current stage became ready: FIFO order inside a lane
    lane_ready_at   timestamptz,
    worker_id       text,
    attempted_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    -- group stages: members run as child jobs; the parent waits on `pending`
    parent_id       bigint REFERENCES jobs (id) ON DELETE CASCADE,
    parent_stage    int,
    member_index    int,
    pending         int,
    group_output    jsonb,
    -- someone awaits this job's end: notify on finish
    watched         boolean     NOT NULL DEFAULT false,
    CONSTRAINT stage_in_chain CHECK (stage >= 0 AND stage < stage_count)
) WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 0);

-- claim: a plain scan of what is claimable, per queue, in pickup order.
CREATE INDEX jobs_available ON jobs (queue, priority, run_at, id) WHERE state = 'available';
-- promoteDue: scheduled and retryable jobs by due time.
CREATE INDEX jobs_due ON jobs (run_at) WHERE state IN ('scheduled', 'retryable');
-- apply_outcomes' guard and rescueLost: running jobs by worker, then id. The id matters: every row
-- a worker ever ran leaves a dead entry under its worker's key until vacuum, and a guard that
-- looked up the worker alone would step over all of them.
CREATE INDEX jobs_running ON jobs (worker_id, id) WHERE state = 'running';
-- promoteLane: the waiting queue of each lane, oldest first.
CREATE INDEX jobs_lane_waiting ON jobs (lane, lane_ready_at, id) WHERE state = 'waiting' AND lane IS NOT NULL;
-- The lane invariant: at most one job per lane holds it (available, running or retryable).
CREATE UNIQUE INDEX jobs_lane_head ON jobs (lane)
    WHERE lane IS NOT NULL AND state IN ('available', 'running', 'retryable');
-- enqueue: same key, same job.
CREATE UNIQUE INDEX jobs_idempotency_key ON jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;
-- prune: finished jobs by age.
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE state IN ('completed', 'discarded', 'cancelled');
-- group fan-in: members of a parent.
CREATE INDEX jobs_parent ON jobs (parent_id, parent_stage, member_index) WHERE parent_id IS NOT NULL;

-- One row per live worker process; its heartbeat is the lease of every job it runs.
CREATE TABLE workers (
    id           text PRIMARY KEY,
    host         text        NOT NULL,
    pid          int         NOT NULL,
    queues       text[]      NOT NULL,
    tasks        text[]      NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
);

-- Who runs maintenance (rescue, scheduling, pruning): one row per chore, held for a short lease
-- and renewed by its holder. A frozen holder (paused, partitioned) loses it when the lease runs
-- out, unlike a session advisory lock, which its open connection would keep.
CREATE TABLE leaders (
    name       text PRIMARY KEY,
    worker_id  text        NOT NULL,
    expires_at timestamptz NOT NULL
);

-- Claim up to `p_limit` available jobs of a queue for a worker, in priority, due time and id order,
-- skipping rows other workers hold. A plain scan of the `jobs_available` partial index: lanes cost
-- nothing here (a job waiting for its lane is not available). A function so that its plan is
-- cached per connection: planning this statement costs more than running it on an idle queue.
CREATE FUNCTION claim(p_queue text, p_limit int, p_worker text)
RETURNS TABLE (id bigint, stage int, attempt int, chain text, input text, results text, metadata text,
               group_output text)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH next AS (
        SELECT n.id FROM jobs n
        WHERE n.state = 'available' AND n.queue = p_queue AND n.run_at <= now()
        ORDER BY n.priority, n.run_at, n.id
        LIMIT p_limit FOR UPDATE SKIP LOCKED
    )
    UPDATE jobs j
    SET state = 'running', attempt = j.attempt + 1, worker_id = p_worker, attempted_at = now()
    FROM next WHERE j.id = next.id
    RETURNING j.id, j.stage, j.attempt, j.chain::text,
        (CASE WHEN j.stage = 0 THEN j.input ELSE j.results -> (j.stage - 1) -> 'output' END)::text,
        CASE WHEN j.stage = 0 THEN NULL ELSE j.results::text END,
        j.metadata::text, j.group_output::text;
END $$;

-- Lane transitions are serialised per lane with a transaction-level advisory lock.
-- The first key namespaces Baton's locks (0x6261746e, "batn").
CREATE FUNCTION lock_lanes(p_lanes text[]) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    k int;
BEGIN
    -- Sorted keys: two transactions locking overlapping sets cannot deadlock.
    FOR k IN SELECT DISTINCT hashtext(l) FROM unnest(p_lanes) AS l WHERE l IS NOT NULL ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(1650553966, k);
    END LOOP;
END $$;

-- For each lane without a holder, make its oldest waiting job the holder. Call with the lanes locked.
-- Returns the jobs made available.
CREATE FUNCTION promote_lanes(p_lanes text[]) RETURNS TABLE (id bigint, queue text)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY
    UPDATE jobs j SET state = 'available', run_at = now()
    FROM (
        SELECT (SELECT w.id FROM jobs w
                WHERE w.lane = l AND w.state = 'waiting'
                ORDER BY w.lane_ready_at, w.id LIMIT 1) AS id
        FROM (SELECT DISTINCT l FROM unnest(p_lanes) AS l WHERE l IS NOT NULL) lanes
        WHERE NOT EXISTS (SELECT 1 FROM jobs h
                          WHERE h.lane = lanes.l AND h.state IN ('available', 'running', 'retryable'))
    ) next
    WHERE j.id = next.id
    RETURNING j.id, j.queue;
END $$;

-- Enqueue a batch of jobs in one call. A job whose first stage names a lane enters it (holder or
-- waiting); a repeated idempotency key (from an earlier call or earlier in this batch) yields the
-- job that holds it. Returns (id, queue, state, inserted) in input order.
--   p_jobs: [{"queue", "priority", "run_at"?, "chain", "input", "metadata", "key"?}, …]
CREATE FUNCTION enqueue(p_jobs jsonb) RETURNS TABLE (id bigint, queue text, state job_state, inserted boolean)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    v_ids bigint[];
    v_new boolean[];
    v_lanes text[];
BEGIN
    -- Lock the lanes entered before inserting, so that their entry time (taken after the lock)
    -- orders them the way the lane lock serialises them.
    SELECT array_agg(DISTINCT l) INTO v_lanes FROM (
        SELECT j -> 'chain' -> 0 ->> 'lane' AS l FROM jsonb_array_elements(p_jobs) j
    ) x WHERE l IS NOT NULL;
    IF v_lanes IS NOT NULL THEN
        PERFORM lock_lanes(v_lanes);
    END IF;

    -- Ids are drawn before the insert so that each input row knows its job without relying on
    -- the order of RETURNING.
    WITH input AS MATERIALIZED (
        SELECT nextval('jobs_id_seq') AS new_id, i.*
        FROM ROWS FROM (jsonb_to_recordset(p_jobs)
                AS (queue text, priority smallint, run_at timestamptz, chain jsonb, input jsonb, metadata jsonb,
                    key text))
            WITH ORDINALITY AS i(queue, priority, run_at, chain, input, metadata, key, ord)
    ), ins AS (
        INSERT INTO jobs (id, queue, priority, state, run_at, chain, stage_count, input, metadata,
                          idempotency_key, lane, lane_ready_at)
        OVERRIDING SYSTEM VALUE
        SELECT i.new_id, coalesce(i.queue, 'default'), coalesce(i.priority, 0),
               CASE WHEN i.run_at > now() THEN 'scheduled'
                    WHEN i.chain -> 0 ->> 'lane' IS NOT NULL THEN 'waiting'
                    ELSE 'available' END::job_state,
               coalesce(i.run_at, now()), i.chain, jsonb_array_length(i.chain), coalesce(i.input, 'null'),
               coalesce(i.metadata, '{}'),
               i.key, i.chain -> 0 ->> 'lane', clock_timestamp()
        FROM input i ORDER BY i.ord
        ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING jobs.id, jobs.lane, jobs.state
    )
    SELECT array_agg(ins.id ORDER BY i.ord), array_agg(ins.id IS NOT NULL ORDER BY i.ord)
    INTO v_ids, v_new
    FROM input i LEFT JOIN ins ON ins.id = i.new_id;

    IF array_position(v_new, false) IS NOT NULL THEN
        -- A new statement, a new snapshot: it sees the job that won the key, even if another
        -- transaction committed it while this one waited.
        SELECT array_agg(coalesce(v.id, j.id) ORDER BY v.ord) INTO v_ids
        FROM unnest(v_ids, ARRAY(SELECT k ->> 'key' FROM jsonb_array_elements(p_jobs) k))
            WITH ORDINALITY AS v(id, key, ord)
        LEFT JOIN jobs j ON v.id IS NULL AND j.idempotency_key = v.key;
    END IF;

    IF v_lanes IS NOT NULL THEN
        PERFORM promote_lanes(v_lanes);
    END IF;

    RETURN QUERY
    SELECT j.id, j.queue, j.state, v.new
    FROM unnest(v_ids, v_new) WITH ORDINALITY AS v(id, new, ord) JOIN jobs j ON j.id = v.id
    ORDER BY v.ord;
END $$;

-- A group fails when one of its members is discarded or cancelled: the parent is discarded with
-- the member's last error, and so on up through nested groups. Members still running are left to
-- finish; the parent ignores them. Returns the watched parents that finished.
CREATE FUNCTION fail_parents(p_members bigint[], p_worker text) RETURNS SETOF bigint
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

CREATE TYPE applied_outcome AS (
    id bigint, kind text, state job_state, queue text, watched boolean, parent_id bigint
);

-- Apply a batch of stage outcomes decided by a worker (see Baton's `Transition`). Each row is
-- applied only if the job is still `running` the same stage and attempt for `p_worker`: a late
-- completion from a worker that lost its lease, or of a cancelled job, changes nothing.
--   hop      next stage starts now on the same worker (state stays running)
--   advance  next stage is ready: available, or waiting for its `lane`
--   complete the chain's last stage succeeded
--   retry    failed attempt; due again after `delay_ms`
--   discard  failed for good
--   spawn    the current (group) stage fans out into member jobs; the job waits for them
--   release  put back untouched (a draining worker); the attempt does not count
-- Returns what the caller must act on after commit: ('applied', id), ('wake', queue) for queues
-- with newly available jobs, ('finished', id) for finished jobs someone awaits.
--   p_batch: [{"id", "stage", "attempt", "kind", "output"?, "error"?, "delay_ms"?, "lane"?}, …]
-- A lane holder promoted here in a queue of `p_queues` is claimed for the worker at once, up to
-- `p_slots` (its free slots in that queue): the next stage of a lane starts without a claim round
-- trip, and is returned as a ('claimed', …) row with the columns of `claim`.
CREATE FUNCTION apply_outcomes(p_worker text, p_batch jsonb, p_queues text[], p_slots int[])
RETURNS TABLE (event text, id bigint, queue text, stage int, attempt int, chain text, input text, results text,
               metadata text, group_output text)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    v_ids bigint[];
    v_lanes text[];
    v_spawn bigint[];
    v_applied applied_outcome[];
    v_promoted_ids bigint[];
    v_promoted_queues text[];
BEGIN
    SELECT array_agg(b.id), array_agg(b.id) FILTER (WHERE b.kind = 'spawn'),
           array_agg(b.lane) FILTER (WHERE b.lane IS NOT NULL)
    INTO v_ids, v_spawn, v_lanes
    FROM jsonb_to_recordset(p_batch) AS b(id bigint, kind text, lane text);

    -- Every lane whose holder may change: the lanes left, entered, and entered by new members.
    -- (`= ANY(array)`: an index scan on the primary key whatever the batch size.)
    SELECT array_agg(DISTINCT x.l) INTO v_lanes FROM (
        SELECT j.lane FROM jobs j WHERE j.id = ANY(v_ids) AND j.lane IS NOT NULL
        UNION ALL SELECT unnest(v_lanes)
        UNION ALL SELECT m ->> 'lane' FROM jobs p, jsonb_array_elements(p.chain -> p.stage -> 'group') m
                  WHERE p.id = ANY(v_spawn)
    ) x(l) WHERE x.l IS NOT NULL;
    IF v_lanes IS NOT NULL THEN
        PERFORM lock_lanes(v_lanes);
    END IF;

    WITH b AS (
        SELECT * FROM jsonb_to_recordset(p_batch)
            AS b(id bigint, stage int, attempt int, kind text, output jsonb, error text, delay_ms bigint, lane text)
    ), upd AS (
        UPDATE jobs j SET
            state = (CASE b.kind
                WHEN 'hop' THEN 'running'
                WHEN 'advance' THEN CASE WHEN b.lane IS NULL THEN 'available' ELSE 'waiting' END
                WHEN 'complete' THEN 'completed'
                WHEN 'retry' THEN 'retryable'
                WHEN 'discard' THEN 'discarded'
                WHEN 'spawn' THEN 'waiting'
                WHEN 'release' THEN 'available' END)::job_state,
            stage = CASE WHEN b.kind IN ('hop', 'advance') THEN j.stage + 1 ELSE j.stage END,
            attempt = CASE b.kind WHEN 'hop' THEN 1 WHEN 'advance' THEN 0 WHEN 'spawn' THEN 0
                                  WHEN 'release' THEN j.attempt - 1 ELSE j.attempt END,
            results = CASE WHEN b.kind IN ('hop', 'advance', 'complete')
                THEN j.results || jsonb_build_array(jsonb_build_object(
                    'output', coalesce(b.output, 'null'), 'attempts', j.attempt,
                    'started_at', j.attempted_at, 'finished_at', now()))
                ELSE j.results END,
            errors = CASE WHEN b.kind IN ('retry', 'discard')
                THEN j.errors || jsonb_build_array(jsonb_build_object(
                    'stage', j.stage, 'attempt', j.attempt, 'at', now(), 'worker', p_worker, 'error', b.error))
                ELSE j.errors END,
            run_at = CASE WHEN b.kind = 'retry' THEN now() + b.delay_ms * interval '1 millisecond'
                          WHEN b.kind IN ('advance', 'release') THEN now() ELSE j.run_at END,
            lane = CASE WHEN b.kind IN ('hop', 'advance') THEN b.lane ELSE j.lane END,
            -- After the lane lock: entry times follow the order the lock serialises entries in.
            lane_ready_at = CASE WHEN b.kind IN ('hop', 'advance') THEN clock_timestamp() ELSE j.lane_ready_at END,
            worker_id = CASE WHEN b.kind = 'hop' THEN j.worker_id END,
            attempted_at = CASE WHEN b.kind = 'hop' THEN now() ELSE j.attempted_at END,
            finished_at = CASE WHEN b.kind IN ('complete', 'discard') THEN now() END,
            pending = CASE WHEN b.kind = 'spawn' THEN jsonb_array_length(j.chain -> j.stage -> 'group')
                           ELSE j.pending END,
            group_output = CASE WHEN b.kind IN ('retry', 'release') THEN j.group_output END
        FROM b
        WHERE j.id = b.id AND j.state = 'running' AND j.worker_id = p_worker
          AND j.stage = b.stage AND j.attempt = b.attempt
        RETURNING j.id, b.kind, j.state, j.queue, j.watched, j.parent_id
    )
    SELECT array_agg(ROW(upd.*)::applied_outcome) INTO v_applied FROM upd;

    -- Fan out: one member job per group entry, each fed the group stage's input.
    IF v_spawn IS NOT NULL THEN
        INSERT INTO jobs (queue, priority, state, chain, stage_count, input, metadata, lane, lane_ready_at,
                          parent_id, parent_stage, member_index)
        SELECT p.queue, p.priority,
               CASE WHEN m.value ->> 'lane' IS NULL THEN 'available' ELSE 'waiting' END::job_state,
               jsonb_build_array(m.value), 1,
               CASE WHEN p.stage = 0 THEN p.input ELSE p.results -> (p.stage - 1) -> 'output' END,
               p.metadata, m.value ->> 'lane', clock_timestamp(), p.id, p.stage, (m.ordinality - 1)::int
        FROM unnest(v_applied) a
        JOIN jobs p ON p.id = a.id
        CROSS JOIN LATERAL jsonb_array_elements(p.chain -> p.stage -> 'group') WITH ORDINALITY m
        WHERE a.kind = 'spawn';
        RETURN QUERY SELECT DISTINCT 'wake', NULL::bigint, a.queue, NULL::int, NULL::int, NULL::text, NULL::text,
                                     NULL::text, NULL::text, NULL::text
                     FROM unnest(v_applied) a WHERE a.kind = 'spawn';
    END IF;

    -- Fan in: completed members count down their parent...
    IF EXISTS (SELECT 1 FROM unnest(v_applied) a WHERE a.parent_id IS NOT NULL) THEN
        UPDATE jobs p SET pending = p.pending - d.n
        FROM (SELECT a.parent_id, count(*) AS n FROM unnest(v_applied) a
              WHERE a.parent_id IS NOT NULL AND a.state = 'completed' GROUP BY a.parent_id) d
        WHERE p.id = d.parent_id AND p.state = 'waiting' AND p.pending IS NOT NULL;
        -- ...and the last one hands the parent its members' outputs, in member order. A separate
        -- statement: its snapshot sees members completed by other transactions meanwhile.
        RETURN QUERY
        UPDATE jobs p SET state = 'available', run_at = now(), pending = NULL,
            group_output = (SELECT jsonb_agg(c.results -> 0 -> 'output' ORDER BY c.member_index)
                            FROM jobs c WHERE c.parent_id = p.id AND c.parent_stage = p.stage)
        WHERE p.id IN (SELECT a.parent_id FROM unnest(v_applied) a WHERE a.state = 'completed')
          AND p.state = 'waiting' AND p.pending = 0
        RETURNING 'wake', NULL::bigint, p.queue, NULL::int, NULL::int, NULL::text, NULL::text, NULL::text,
                  NULL::text, NULL::text;

        RETURN QUERY SELECT 'finished', f, NULL::text, NULL::int, NULL::int, NULL::text, NULL::text, NULL::text,
                            NULL::text, NULL::text FROM fail_parents(
            (SELECT array_agg(a.id) FROM unnest(v_applied) a WHERE a.parent_id IS NOT NULL AND a.state = 'discarded'),
            p_worker) AS f;
    END IF;

    IF v_lanes IS NOT NULL THEN
        SELECT array_agg(p.id), array_agg(p.queue) INTO v_promoted_ids, v_promoted_queues
        FROM promote_lanes(v_lanes) p;
        IF v_promoted_ids IS NOT NULL THEN
            RETURN QUERY
            WITH promoted AS (
                SELECT p.id, p.queue, row_number() OVER (PARTITION BY p.queue ORDER BY p.id) AS n
                FROM unnest(v_promoted_ids, v_promoted_queues) AS p(id, queue)
            ), taken AS (
                SELECT p.id FROM promoted p JOIN unnest(p_queues, p_slots) AS s(queue, slots)
                    ON s.queue = p.queue AND p.n <= s.slots
            ), claimed AS (
                UPDATE jobs j
                SET state = 'running', attempt = j.attempt + 1, worker_id = p_worker, attempted_at = now()
                FROM taken WHERE j.id = taken.id
                RETURNING j.id, j.queue, j.stage, j.attempt, j.chain::text AS chain,
                    (CASE WHEN j.stage = 0 THEN j.input ELSE j.results -> (j.stage - 1) -> 'output' END)::text AS input,
                    CASE WHEN j.stage = 0 THEN NULL ELSE j.results::text END AS results,
                    j.metadata::text AS metadata, j.group_output::text AS group_output
            )
            SELECT 'claimed', c.id, c.queue, c.stage, c.attempt, c.chain, c.input, c.results, c.metadata, c.group_output
            FROM claimed c
            UNION ALL
            -- Those not taken wait for any worker of their queue.
            SELECT DISTINCT 'wake', NULL::bigint, p.queue, NULL::int, NULL::int, NULL::text, NULL::text,
                   NULL::text, NULL::text, NULL::text
            FROM promoted p WHERE p.id NOT IN (SELECT t.id FROM taken t);
        END IF;
    END IF;

    RETURN QUERY
    SELECT x.event, x.id, x.queue, NULL::int, NULL::int, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text
    FROM (
        SELECT 'wake' AS event, NULL::bigint AS id, a.queue FROM unnest(v_applied) a
            WHERE a.state = 'available' GROUP BY a.queue
        UNION ALL
        SELECT 'finished', a.id, NULL FROM unnest(v_applied) a
            WHERE a.watched AND a.state IN ('completed', 'discarded')
        UNION ALL
        SELECT 'applied', a.id, NULL FROM unnest(v_applied) a
    ) x;
END $$;

-- Scheduled and retryable jobs that are due become available; a due scheduled job whose stage
-- names a lane joins that lane's queue (in order of its due time). Returns the queues woken.
CREATE FUNCTION promote_due(p_limit int) RETURNS SETOF text
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    v_queues text[];
    v_lanes text[];
BEGIN
    WITH due AS (
        SELECT d.id FROM jobs d
        WHERE d.state IN ('scheduled', 'retryable') AND d.run_at <= now()
        ORDER BY d.run_at LIMIT p_limit FOR UPDATE SKIP LOCKED
    ), upd AS (
        UPDATE jobs j SET
            state = (CASE WHEN j.state = 'scheduled' AND j.lane IS NOT NULL THEN 'waiting'
                          ELSE 'available' END)::job_state,
            lane_ready_at = CASE WHEN j.state = 'scheduled' THEN j.run_at ELSE j.lane_ready_at END
        FROM due WHERE j.id = due.id
        RETURNING j.queue, j.state, j.lane
    )
    SELECT array_agg(DISTINCT upd.queue) FILTER (WHERE upd.state = 'available'),
           array_agg(DISTINCT upd.lane) FILTER (WHERE upd.state = 'waiting')
    INTO v_queues, v_lanes FROM upd;
    IF v_lanes IS NOT NULL THEN
        PERFORM lock_lanes(v_lanes);
        v_queues := v_queues || ARRAY(SELECT p.queue FROM promote_lanes(v_lanes) p);
    END IF;
    RETURN QUERY SELECT DISTINCT q FROM unnest(v_queues) AS q;
END $$;

-- Cancel a job that has not finished, with its unfinished group members; lanes they held move on.
-- Returns (id, worker_id) of every job cancelled, so that the workers running them can stop.
CREATE FUNCTION cancel_job(p_id bigint) RETURNS TABLE (id bigint, worker_id text, watched boolean)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    v_ids bigint[];
    v_lanes text[];
BEGIN
    WITH RECURSIVE tree AS (
        SELECT j.id, j.lane FROM jobs j WHERE j.id = p_id
        UNION ALL
        SELECT c.id, c.lane FROM jobs c JOIN tree t ON c.parent_id = t.id
    )
    SELECT array_agg(t.id), array_agg(t.lane) FILTER (WHERE t.lane IS NOT NULL) INTO v_ids, v_lanes FROM tree t;
    IF v_lanes IS NOT NULL THEN
        PERFORM lock_lanes(v_lanes);
    END IF;
    RETURN QUERY
    WITH c AS (
        UPDATE jobs j SET state = 'cancelled', finished_at = now(), worker_id = NULL, pending = NULL
        FROM jobs old
        WHERE j.id = ANY(v_ids) AND old.id = j.id
          AND j.state NOT IN ('completed', 'discarded', 'cancelled')
        RETURNING j.id, old.worker_id, j.watched
    ) SELECT c.id, c.worker_id, c.watched FROM c;
    -- A cancelled member fails its group, as a discarded one does.
    IF (SELECT j.parent_id FROM jobs j WHERE j.id = p_id) IS NOT NULL THEN
        RETURN QUERY SELECT f, NULL::text, true FROM fail_parents(ARRAY[p_id], NULL) AS f;
    END IF;
    IF v_lanes IS NOT NULL THEN
        PERFORM promote_lanes(v_lanes);
    END IF;
END $$;
