-- Baton schema, step 2: what the HTTP control plane needs.
--   * paused queues: workers claim nothing from a queue listed here (pause/resume);
--   * who enqueued a job (a fingerprint of the API token), so an `enqueue` token reads its own jobs;
--   * retry of a discarded or cancelled job.
-- Functions changed here are replaced whole; only the lines marked "0002" differ from 0001.

CREATE TABLE paused_queues (
    queue     text PRIMARY KEY,
    paused_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE jobs ADD COLUMN enqueued_by text;

CREATE OR REPLACE FUNCTION claim(p_queue text, p_limit int, p_worker text)
RETURNS TABLE (id bigint, stage int, attempt int, chain text, input text, results text, metadata text,
               group_output text)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    -- 0002: a paused queue hands out nothing (one primary-key probe).
    IF EXISTS (SELECT 1 FROM paused_queues q WHERE q.queue = p_queue) THEN
        RETURN;
    END IF;
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

-- 0002: also takes "owner" per job and returns run_at and created_at, so that the control plane
-- can answer with the job without reading it back; new jobs outside lanes are answered from the
-- insert's RETURNING instead of a second look-up per job.
--   p_jobs: [{"queue", "priority", "run_at"?, "chain", "input", "metadata", "key"?, "owner"?}, …]
DROP FUNCTION enqueue(jsonb);
CREATE FUNCTION enqueue(p_jobs jsonb) RETURNS TABLE (id bigint, queue text, state job_state, inserted boolean, run_at timestamptz,
                                           created_at timestamptz)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    v_ids bigint[];
    v_new boolean[];
    v_lanes text[];
    v_queues text[];
    v_states job_state[];
    v_run_at timestamptz[];
    v_created_at timestamptz[];
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
                    key text, owner text))
            WITH ORDINALITY AS i(queue, priority, run_at, chain, input, metadata, key, owner, ord)
    ), ins AS (
        INSERT INTO jobs (id, queue, priority, state, run_at, chain, stage_count, input, metadata,
                          idempotency_key, lane, lane_ready_at, enqueued_by)
        OVERRIDING SYSTEM VALUE
        SELECT i.new_id, coalesce(i.queue, 'default'), coalesce(i.priority, 0),
               CASE WHEN i.run_at > now() THEN 'scheduled'
                    WHEN i.chain -> 0 ->> 'lane' IS NOT NULL THEN 'waiting'
                    ELSE 'available' END::job_state,
               coalesce(i.run_at, now()), i.chain, jsonb_array_length(i.chain), coalesce(i.input, 'null'),
               coalesce(i.metadata, '{}'),
               i.key, i.chain -> 0 ->> 'lane', clock_timestamp(), i.owner
        FROM input i ORDER BY i.ord
        ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING jobs.id, jobs.queue, jobs.state, jobs.run_at, jobs.created_at
    )
    SELECT array_agg(ins.id ORDER BY i.ord), array_agg(ins.id IS NOT NULL ORDER BY i.ord),
           array_agg(ins.queue ORDER BY i.ord), array_agg(ins.state ORDER BY i.ord),
           array_agg(ins.run_at ORDER BY i.ord), array_agg(ins.created_at ORDER BY i.ord)
    INTO v_ids, v_new, v_queues, v_states, v_run_at, v_created_at
    FROM input i LEFT JOIN ins ON ins.id = i.new_id;

    -- 0002: the common case (new jobs, no lanes) answers from what the insert returned.
    IF array_position(v_new, false) IS NULL AND v_lanes IS NULL THEN
        RETURN QUERY SELECT * FROM unnest(v_ids, v_queues, v_states, v_new, v_run_at, v_created_at);
        RETURN;
    END IF;

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
    SELECT j.id, j.queue, j.state, v.new, j.run_at, j.created_at
    FROM unnest(v_ids, v_new) WITH ORDINALITY AS v(id, new, ord) JOIN jobs j ON j.id = v.id
    ORDER BY v.ord;
END $$;

-- 0002: a lane hand-off in a paused queue is no longer claimed by the worker that released it.
CREATE OR REPLACE FUNCTION apply_outcomes(p_worker text, p_batch jsonb, p_queues text[], p_slots int[])
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
                -- 0002: the next holder of a lane in a paused queue waits for resume, like any job.
                WHERE NOT EXISTS (SELECT 1 FROM paused_queues q WHERE q.queue = p.queue)
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


-- Whether any group member of the job, at any depth, has not finished. A job with such members
-- is neither retried nor deleted: deleting them (by cascade) would skip their lanes' hand-off.
-- Walks `jobs_parent`.
CREATE FUNCTION unfinished_members(p_id bigint) RETURNS boolean
LANGUAGE sql STABLE SET search_path FROM CURRENT AS $$
    WITH RECURSIVE tree AS (
        SELECT m.id, m.state FROM jobs m WHERE m.parent_id = p_id
        UNION ALL
        SELECT c.id, c.state FROM jobs c JOIN tree t ON c.parent_id = t.id
    )
    SELECT EXISTS (SELECT 1 FROM tree WHERE tree.state NOT IN ('completed', 'discarded', 'cancelled'))
$$;

-- Start a discarded or cancelled job again at the stage it stopped on, with fresh attempts; its
-- history (results, errors) stays. A laned stage rejoins the back of its lane. A group stage fans
-- out anew: members left from the failed run are deleted, so the job must not have members still
-- running (cancel or wait for them first). Group members are retried through their parent.
-- Returns (id, queue, state) of the job, or nothing when it is not retryable; raises
-- `no_data_found` for an unknown id.
CREATE FUNCTION retry_job(p_id bigint) RETURNS TABLE (id bigint, queue text, state job_state)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
    v_job jobs;
BEGIN
    SELECT * INTO v_job FROM jobs j WHERE j.id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % not found', p_id USING ERRCODE = 'no_data_found';
    END IF;
    IF v_job.state NOT IN ('discarded', 'cancelled') OR v_job.parent_id IS NOT NULL
       OR unfinished_members(p_id) THEN
        RETURN;
    END IF;
    DELETE FROM jobs m WHERE m.parent_id = p_id AND m.parent_stage = v_job.stage;
    IF v_job.lane IS NOT NULL THEN
        PERFORM lock_lanes(ARRAY[v_job.lane]);
    END IF;
    UPDATE jobs j SET
        state = (CASE WHEN j.lane IS NULL THEN 'available' ELSE 'waiting' END)::job_state,
        attempt = 0, run_at = now(), finished_at = NULL, worker_id = NULL, pending = NULL,
        group_output = NULL, lane_ready_at = clock_timestamp()
    WHERE j.id = p_id;
    IF v_job.lane IS NOT NULL THEN
        PERFORM promote_lanes(ARRAY[v_job.lane]);
    END IF;
    RETURN QUERY SELECT j.id, j.queue, j.state FROM jobs j WHERE j.id = p_id;
END $$;
