-- Apply a batch of stage outcomes decided by a worker (see Baton's `Transition`). Each row is
-- applied only if the job is still `running` the same stage and attempt for `p_worker`: a late
-- completion from a worker that lost its lease, or of a cancelled job, changes nothing.
--   hop      next stage starts now on the same worker (state stays running)
--   advance  next stage is ready: available, or waiting for its `lane`
--   complete the chain's last stage succeeded
--   retry    failed attempt; due again after `delay_ms` (with `"pause": true` as for snooze)
--   discard  failed for good
--   spawn    the current (group) stage fans out into member jobs; the job waits for them
--   release  put back untouched (a draining worker); the attempt does not count
--   snooze   the task asked to run again after `delay_ms`, its attempt not counted (retryable,
--            keeping its lane, `snoozed`); with `"pause": true`, its rate limit key gives no
--            token for as long
--   await    the stage awaits a signal not yet delivered: the job waits for it, holding no worker,
--            until `delay_ms` from now (then expire_waits fails the attempt)
-- Returns what the caller must act on after commit: ('applied', id), ('wake', queue) for queues
-- with newly available jobs, ('finished', id) for finished jobs someone awaits, ('handed-on', id)
-- for a hop applied as an advance (its next stage's queue is rate limited: the worker must not
-- run it).
--   p_batch: [{"id", "stage", "attempt", "kind", "output"?, "error"?, "code"?, "details"?, "delay_ms"?,
--             "lane"?, "target"?, "queue"?, "pause"?, "log"?}, …]
-- `log`: what the task logged during the attempt, kept in the attempt's entry (results or errors).
-- `target`: the position a hop or advance goes to, when a `goto` or `repeat` chose it (else the next).
-- `results` is the path taken: one entry per run, with the position it ran at (`stage`); a stage's
-- input is the last entry's output (the job's input before any). A repeated stage keeps its place
-- in its lane, and starts without the progress of its run before. `queue`: the queue the stage
-- hopped or advanced to names (else the job's own, `home_queue` once a stage has left it).
-- A lane holder promoted here in a queue of `p_queues` is claimed for the worker at once, up to
-- `p_slots` (its free slots in that queue; not in a paused queue): the next stage of a lane starts
-- without a claim round trip, and is returned as a ('claimed', …) row with the columns of
-- `claim_for` but the wait for a token; only if the worker runs its task (`p_tasks`, as in `claim_for`).
-- In a wider lane, an older holder still waiting for a worker is claimed before it (a lane's stages
-- start in the order they were admitted).
-- `enable_seqscan = off`: every statement here finds its rows through an index (by id, lane,
-- parent). Plans are cached per connection, and one made while `jobs` was nearly empty (a worker
-- started on a new database) scanned the whole table for each batch: as the table grew, a flush of
-- thousands of outcomes slowed with it (docs/benchmarks.md#a-plan-made-on-an-empty-table). Planning
-- the outcomes' update at every call instead made every flush pay for a plan
-- (docs/benchmarks.md#plans-that-stay-good). `plan_cache_mode = force_generic_plan` for the same
-- reason: left to choose, the plan cache kept planning the lanes' look-up afresh at every call (its
-- generic plan, a probe of the primary key per id, is estimated dearer than a custom one for an
-- array it cannot see), which was much of what an empty flush cost
-- (docs/benchmarks.md#plans-made-once). `jit = off`, as on every function a client calls
-- (Migrator.swift): over deep lanes the hand-over's plan passed `jit_above_cost` and was compiled
-- again at every flush, at a cost far above running it
-- (docs/benchmarks.md#issue-20-compiled-at-every-flush-2026-11-27).
CREATE OR REPLACE FUNCTION apply_outcomes_for(p_worker text, p_batch jsonb, p_queues text[], p_slots int[],
                                              p_tasks text[])
RETURNS TABLE (event text, id bigint, queue text, stage int, attempt int, chain text, input text, results text,
               metadata text, group_output text)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off
    SET enable_seqscan = off SET plan_cache_mode = force_generic_plan SET enable_nestloop = on
AS $$
#variable_conflict use_column
DECLARE
    v_ids bigint[];
    v_lanes text[];
    v_spawn bigint[];
    v_awaits boolean;
    v_applied applied_outcome[];
    v_repeats boolean;
    v_pauses boolean;
    v_pause_keys text[];
    v_pause_ms bigint[];
    -- Whether a limit binds a whole queue or lane: then each stage's key is looked up.
    v_scoped boolean := scoped_rate_limits();
    -- Hops handed on, their next stage being rate limited.
    v_handed bigint[];
    -- The chain features the worker reads (migration 25), for the lanes' hand-over.
    v_features text[];
BEGIN
    SELECT array_agg(b.id), array_agg(b.id) FILTER (WHERE b.kind = 'spawn'),
           array_agg(b.lane) FILTER (WHERE b.lane IS NOT NULL), bool_or(b.kind = 'await'),
           bool_or(b.target = b.stage), bool_or(b.pause)
    INTO v_ids, v_spawn, v_lanes, v_awaits, v_repeats, v_pauses
    FROM jsonb_to_recordset(p_batch) AS b(id bigint, stage int, kind text, lane text, target int, pause boolean);

    -- Every lane whose holder may change: the lanes left, entered, and entered by new members.
    -- (`= ANY(array)`: an index scan on the primary key whatever the batch size.)
    -- Each outcome's row is read once, for its lane and its parent.
    WITH batch AS MATERIALIZED (
        SELECT j.lane, j.parent_id FROM jobs j WHERE j.id = ANY(v_ids) AND (j.lane IS NOT NULL OR j.parent_id IS NOT NULL)
    )
    SELECT array_agg(DISTINCT x.l) INTO v_lanes FROM (
        SELECT b.lane FROM batch b WHERE b.lane IS NOT NULL
        UNION ALL SELECT unnest(v_lanes)
        UNION ALL SELECT coalesce(m -> 'stages' -> 0, m) ->> 'lane'
                  FROM jobs p, jsonb_array_elements(p.chain -> p.stage -> 'group') m
                  WHERE p.id = ANY(v_spawn)
        -- (a map's runs all start at its first stage, at its fan-out or, with a bound, as the runs
        -- before them complete)
        UNION ALL SELECT p.chain -> p.stage -> 'stages' -> 0 ->> 'lane'
                  FROM jobs p WHERE p.id = ANY(v_spawn) AND p.chain -> p.stage ? 'map'
        -- (a run of a bounded map may start another, or one a retry queued, at any of its stages;
        -- looked for only when the batch has runs)
        UNION ALL SELECT map_lanes(g.parents)
                  FROM (SELECT array_agg(DISTINCT b.parent_id) AS parents FROM batch b WHERE b.parent_id IS NOT NULL) g
                  WHERE g.parents IS NOT NULL
    ) x(l) WHERE x.l IS NOT NULL;
    IF v_lanes IS NOT NULL THEN
        PERFORM lock_lanes(v_lanes);
    END IF;

    -- A hop into a stage whose queue is rate limited as a whole (the worker cannot know; a key the
    -- stage names it does, and advances instead): the stage starts only with a token, which a
    -- claim takes, so the hop becomes an advance, and the worker is told ('handed-on').
    IF v_scoped THEN
        SELECT array_agg(j.id) INTO v_handed
        FROM jsonb_to_recordset(p_batch) AS b(id bigint, kind text, target int, queue text)
        JOIN jobs j ON j.id = b.id
        WHERE b.kind = 'hop'
          AND stage_rate_key(j.chain -> coalesce(b.target, j.stage + 1), coalesce(b.queue, j.home_queue, j.queue)) <> '';
        IF v_handed IS NOT NULL THEN
            SELECT jsonb_agg(CASE WHEN (e ->> 'id')::bigint = ANY (v_handed) THEN jsonb_set(e, '{kind}', '"advance"')
                                  ELSE e END)
            INTO p_batch FROM jsonb_array_elements(p_batch) e;
        END IF;
    END IF;

    -- The batch meets its rows by hashing, never by a nested loop: a plan cached while `jobs` was
    -- nearly empty (a worker started on a new database) took the table as the loop's outer side,
    -- one row estimated, and compared every outcome with every row found: quadratic once the table
    -- had grown (`CachedPlanTests`;
    -- docs/benchmarks.md#issue-21-part-5-a-plan-made-on-an-empty-table-again-2026-11-27-night).
    -- `= ANY (v_ids)` finds the rows by the primary key whatever the statistics.
    PERFORM set_config('enable_nestloop', 'off', true);
    WITH b AS (
        SELECT * FROM jsonb_to_recordset(p_batch)
            AS b(id bigint, stage int, attempt int, kind text, output jsonb, error text, code text, details jsonb,
                 delay_ms bigint, lane text, target int, queue text, log text, elements jsonb)
    ), upd AS (
        UPDATE jobs j SET
            state = (CASE b.kind
                WHEN 'hop' THEN 'running'
                WHEN 'advance' THEN CASE WHEN b.lane IS NULL THEN 'available' ELSE 'waiting' END
                WHEN 'complete' THEN 'completed'
                WHEN 'retry' THEN 'retryable'
                WHEN 'snooze' THEN 'retryable'
                WHEN 'discard' THEN 'discarded'
                WHEN 'spawn' THEN 'waiting'
                WHEN 'release' THEN 'available'
                WHEN 'await' THEN 'waiting' END)::job_state,
            stage = CASE WHEN b.kind IN ('hop', 'advance') THEN coalesce(b.target, j.stage + 1) ELSE j.stage END,
            attempt = CASE b.kind WHEN 'hop' THEN 1 WHEN 'advance' THEN 0 WHEN 'spawn' THEN 0
                                  WHEN 'release' THEN j.attempt - 1 WHEN 'snooze' THEN j.attempt - 1
                                  ELSE j.attempt END,
            results = CASE WHEN b.kind IN ('hop', 'advance', 'complete')
                THEN j.results || jsonb_build_array(jsonb_build_object(
                    'stage', j.stage, 'output', coalesce(b.output, 'null'), 'attempts', j.attempt,
                    'started_at', j.attempted_at, 'finished_at', now())
                    || CASE WHEN b.log IS NULL THEN '{}' ELSE jsonb_build_object('log', b.log) END)
                ELSE j.results END,
            errors = CASE WHEN b.kind IN ('retry', 'discard')
                THEN j.errors || jsonb_build_array(jsonb_build_object(
                    'stage', j.stage, 'attempt', j.attempt, 'at', now(), 'worker', p_worker, 'error', b.error)
                    || CASE WHEN b.code IS NULL THEN '{}' ELSE jsonb_build_object('code', b.code) END
                    || CASE WHEN b.details IS NULL THEN '{}' ELSE jsonb_build_object('details', b.details) END
                    || CASE WHEN b.log IS NULL THEN '{}' ELSE jsonb_build_object('log', b.log) END)
                ELSE j.errors END,
            run_at = CASE WHEN b.kind IN ('retry', 'snooze', 'await') THEN now() + b.delay_ms * interval '1 millisecond'
                          WHEN b.kind IN ('advance', 'release') THEN now() ELSE j.run_at END,
            lane = CASE WHEN b.kind IN ('hop', 'advance') THEN b.lane ELSE j.lane END,
            queue = CASE WHEN b.kind IN ('hop', 'advance') THEN coalesce(b.queue, j.home_queue, j.queue) ELSE j.queue END,
            rate_key = CASE WHEN b.kind NOT IN ('hop', 'advance') THEN j.rate_key
                            WHEN v_scoped THEN stage_rate_key(j.chain -> coalesce(b.target, j.stage + 1),
                                                              coalesce(b.queue, j.home_queue, j.queue))
                            ELSE coalesce(j.chain -> coalesce(b.target, j.stage + 1) ->> 'rate', '') END,
            home_queue = CASE WHEN b.queue IS NOT NULL THEN coalesce(j.home_queue, j.queue) ELSE j.home_queue END,
            -- After the lane lock: entry times follow the order the lock serialises entries in.
            -- A stage repeated in its lane keeps its place: it is promoted again before any other.
            -- A stage in no lane keeps the old time, unread: an indexed column left alone lets a
            -- hop be a HOT update, with no new entry in any index of `jobs`.
            lane_ready_at = CASE WHEN b.kind IN ('hop', 'advance') AND b.lane IS NOT NULL
                                  AND NOT (b.target IS NOT DISTINCT FROM j.stage AND b.lane IS NOT DISTINCT FROM j.lane)
                                 THEN clock_timestamp() ELSE j.lane_ready_at END,
            worker_id = CASE WHEN b.kind = 'hop' THEN j.worker_id END,
            attempted_at = CASE WHEN b.kind = 'hop' THEN now() ELSE j.attempted_at END,
            finished_at = CASE WHEN b.kind IN ('complete', 'discard') THEN now() END,
            pending = CASE WHEN b.kind = 'spawn'
                           THEN coalesce(jsonb_array_length(b.elements), jsonb_array_length(j.chain -> j.stage -> 'group'))
                           ELSE j.pending END,
            group_output = CASE WHEN b.kind IN ('retry', 'release', 'snooze') THEN j.group_output END,
            snoozed = b.kind = 'snooze'
        FROM b
        -- Each outcome's row is found by its id alone; whose it is and its state are checked on the
        -- row found (`IS TRUE` keeps them from being used to find rows). The planner, counting live
        -- rows only, would otherwise scan `jobs_running` for the worker and walk an entry for every
        -- job the worker ran since the last vacuum, which under a deep lane backlog cost each batch
        -- dearly (docs/benchmarks.md#finding-a-flushs-rows-by-worker).
        WHERE j.id = ANY (v_ids) AND j.id = b.id AND (j.state = 'running' AND j.worker_id = p_worker) IS TRUE
          AND j.stage = b.stage AND j.attempt = b.attempt
        RETURNING j.id, b.kind, j.state, j.queue, j.watched, j.parent_id
    )
    SELECT array_agg(ROW(upd.*)::applied_outcome) INTO v_applied FROM upd;
    PERFORM set_config('enable_nestloop', 'on', true);

    -- A snooze or a retry that pauses its stage's rate limit key: the key gives no token before
    -- the stage's own delay is over (its bucket set so that the next token comes then), across
    -- every worker.
    IF v_pauses THEN
        SELECT array_agg(g.key ORDER BY g.key), array_agg(g.delay_ms ORDER BY g.key) INTO v_pause_keys, v_pause_ms
        FROM (SELECT j.rate_key AS key, max(b.delay_ms) AS delay_ms
              FROM jsonb_to_recordset(p_batch) AS b(id bigint, kind text, pause boolean, delay_ms bigint)
              JOIN unnest(v_applied) a ON a.id = b.id
              JOIN jobs j ON j.id = b.id
              WHERE b.kind IN ('snooze', 'retry') AND b.pause AND j.rate_key <> ''
              GROUP BY j.rate_key) g;
        IF v_pause_keys IS NOT NULL THEN
            -- Each bucket (`rate_tokens`, migration 22) under its key's lock, as a claim spends it.
            PERFORM lock_rate_keys(v_pause_keys);
            WITH p AS (
                SELECT r.key, r.burst, r.rate, r.per_ms, p.delay_ms, t.key IS NOT NULL AS stored,
                       least(least(r.burst, coalesce(t.tokens, r.tokens)
                                   + extract(epoch FROM now() - coalesce(t.refilled_at, r.refilled_at))
                                     * 1000.0 * r.rate / r.per_ms),
                             1 - p.delay_ms * r.rate::float8 / r.per_ms) AS tokens
                FROM unnest(v_pause_keys, v_pause_ms) AS p(key, delay_ms)
                JOIN rate_limits r ON r.key = p.key
                LEFT JOIN rate_tokens t ON t.key = p.key
            ), updated AS (
                UPDATE rate_tokens t SET tokens = p.tokens, refilled_at = now() FROM p
                WHERE p.stored AND t.key = p.key
            )
            INSERT INTO rate_tokens (slot, key, tokens, refilled_at)
            SELECT ready_slot(), p.key, p.tokens, now() FROM p WHERE NOT p.stored;
        END IF;
    END IF;

    IF v_repeats THEN
        DELETE FROM job_progress p
        USING jsonb_to_recordset(p_batch) AS b(id bigint, stage int, target int), unnest(v_applied) a
        WHERE b.target = b.stage AND a.id = b.id AND p.job_id = b.id AND p.stage = b.stage;
        -- A repeated stage waits again at its old place, perhaps below its lane's floor
        -- (`lane_floors`): the floor comes down to it. (Deleted, the admission below would probe
        -- the lane whole, past the entry of every job that waited in it since a held horizon
        -- began; `promote_due_from` does the same for a delayed job.)
        UPDATE lane_floors f SET ready_at = w.ready_at, id = w.id
        FROM (SELECT DISTINCT ON (r.lane) r.lane, r.ready_at, r.id
              FROM (SELECT b.lane, b.id, (SELECT j.lane_ready_at FROM jobs j WHERE j.id = b.id) AS ready_at
                    FROM jsonb_to_recordset(p_batch) AS b(id bigint, stage int, target int, lane text)
                    JOIN unnest(v_applied) a ON a.id = b.id
                    WHERE b.target = b.stage AND b.lane IS NOT NULL) r
              ORDER BY r.lane, r.ready_at, r.id) w
        WHERE f.lane = w.lane AND (w.ready_at, w.id) < (f.ready_at, f.id);
    END IF;

    -- A signal delivered while its stage ran was kept (deliver_signal found the job running): the
    -- wait ends at once, and the claim that follows counts the attempt again. A statement of its
    -- own, whose snapshot sees signals committed while the update above waited for the row.
    IF v_awaits THEN
        RETURN QUERY
        UPDATE jobs j SET state = 'available', run_at = now(), attempt = j.attempt - 1
        FROM unnest(v_applied) a
        WHERE a.kind = 'await' AND j.id = a.id AND j.state = 'waiting'
          AND EXISTS (SELECT 1 FROM job_signals s WHERE s.job_id = j.id AND s.name = j.chain -> j.stage ->> 'await')
        RETURNING 'wake', NULL::bigint, j.queue, NULL::int, NULL::int, NULL::text, NULL::text, NULL::text,
                  NULL::text, NULL::text;
    END IF;

    -- Fan out: one member job per group entry, each fed the group stage's input, or per element of
    -- a map (the outcome's `elements`), each fed its element; their queues are woken. A member is
    -- a stage (its job's chain of one) or a sub-chain (`stages`; a map's are its `stages`): its
    -- job starts at the first stage, in that stage's queue and lane.
    IF v_spawn IS NOT NULL THEN
        -- A map with a bound (`concurrency`): the elements beyond it wait in `map_elements`
        -- (migration 26), any left from an earlier fan-out of the stage (a retry) dropped first.
        DELETE FROM map_elements e USING unnest(v_applied) a WHERE a.kind = 'spawn' AND e.parent_id = a.id;
        INSERT INTO map_elements (parent_id, stage, index, value)
        SELECT p.id, p.stage, (e.ordinality - 1)::int, e.value
        FROM unnest(v_applied) a
        JOIN jobs p ON p.id = a.id
        CROSS JOIN LATERAL jsonb_array_elements((SELECT x -> 'elements' FROM jsonb_array_elements(p_batch) x
                                                 WHERE (x ->> 'id')::bigint = p.id)) WITH ORDINALITY e
        WHERE a.kind = 'spawn' AND e.ordinality > (p.chain -> p.stage ->> 'concurrency')::int;
        RETURN QUERY
        WITH members AS (
        INSERT INTO jobs (queue, priority, state, chain, stage_count, input, metadata, lane, lane_ready_at,
                          parent_id, parent_stage, member_index, rate_key, features, fair_key, fair_weight)
        SELECT coalesce(f.stage ->> 'queue', p.queue), p.priority,
               CASE WHEN f.stage ->> 'lane' IS NULL THEN 'available' ELSE 'waiting' END::job_state,
               f.chain, jsonb_array_length(f.chain),
               CASE WHEN m.mapped THEN m.value
                    WHEN jsonb_array_length(p.results) = 0 THEN p.input ELSE p.results -> -1 -> 'output' END,
               p.metadata, f.stage ->> 'lane', clock_timestamp(), p.id, p.stage, (m.ordinality - 1)::int,
               CASE WHEN v_scoped THEN stage_rate_key(f.stage, coalesce(f.stage ->> 'queue', p.queue))
                    ELSE coalesce(f.stage ->> 'rate', '') END,
               p.features, p.fair_key, p.fair_weight
        FROM unnest(v_applied) a
        JOIN jobs p ON p.id = a.id
        CROSS JOIN LATERAL (
            SELECT g.value, g.ordinality, false AS mapped
            FROM jsonb_array_elements(p.chain -> p.stage -> 'group') WITH ORDINALITY g
            UNION ALL
            SELECT e.value, e.ordinality, true
            FROM jsonb_array_elements((SELECT x -> 'elements' FROM jsonb_array_elements(p_batch) x
                                       WHERE (x ->> 'id')::bigint = p.id)) WITH ORDINALITY e
            WHERE p.chain -> p.stage ? 'map'
              AND e.ordinality <= coalesce((p.chain -> p.stage ->> 'concurrency')::int, e.ordinality)
        ) m
        CROSS JOIN LATERAL (
            SELECT c.chain, c.chain -> 0 AS stage
            FROM (SELECT CASE WHEN m.mapped THEN p.chain -> p.stage -> 'stages'
                              ELSE coalesce(m.value -> 'stages', jsonb_build_array(m.value)) END AS chain) c
        ) f
        WHERE a.kind = 'spawn'
        RETURNING jobs.queue
        )
        SELECT DISTINCT 'wake', NULL::bigint, members.queue, NULL::int, NULL::int, NULL::text, NULL::text,
               NULL::text, NULL::text, NULL::text
        FROM members;
    END IF;

    IF EXISTS (SELECT 1 FROM unnest(v_applied) a WHERE a.parent_id IS NOT NULL) THEN
        -- Members that failed for good fail their group or map, or are counted by a map that goes
        -- on (first: a map that fails starts no run for the members completed beside them).
        RETURN QUERY SELECT f.event, f.id, f.queue, NULL::int, NULL::int, NULL::text, NULL::text, NULL::text,
                            NULL::text, NULL::text FROM fail_members(
            (SELECT array_agg(a.id) FROM unnest(v_applied) a WHERE a.parent_id IS NOT NULL AND a.state = 'discarded'),
            p_worker) AS f;
        -- Fan in: completed members count down their parent...
        UPDATE jobs p SET pending = p.pending - d.n
        FROM (SELECT a.parent_id, count(*) AS n FROM unnest(v_applied) a
              WHERE a.parent_id IS NOT NULL AND a.state = 'completed' GROUP BY a.parent_id) d
        WHERE p.id = d.parent_id AND p.state = 'waiting' AND p.pending IS NOT NULL;
        -- A map with a bound: as many runs start as completed, the next in element order
        -- (`map_runs_next`). The update above holds each parent's row, so a concurrent batch's runs
        -- of the same map start after this one's commit, and see them.
        RETURN QUERY
        SELECT DISTINCT 'wake', NULL::bigint, r.queue, NULL::int, NULL::int, NULL::text, NULL::text, NULL::text,
               NULL::text, NULL::text
        FROM (SELECT a.parent_id, count(*)::int AS n FROM unnest(v_applied) a
              WHERE a.parent_id IS NOT NULL AND a.state = 'completed' GROUP BY a.parent_id) d
        JOIN jobs p ON p.id = d.parent_id
        CROSS JOIN LATERAL map_runs_next(p.id, d.n) r
        WHERE p.state = 'waiting' AND p.chain -> p.stage ? 'concurrency';
        -- ...and the last one hands the parent its members' outputs (each its last stage's), in
        -- member order. A separate statement: its snapshot sees members completed by other
        -- transactions meanwhile.
        RETURN QUERY
        UPDATE jobs p SET state = 'available', run_at = now(), pending = NULL, failed = NULL,
            group_output = map_output(p.id, p.stage)
        WHERE p.id IN (SELECT a.parent_id FROM unnest(v_applied) a WHERE a.state = 'completed')
          AND p.state = 'waiting' AND p.pending = 0
        RETURNING 'wake', NULL::bigint, p.queue, NULL::int, NULL::int, NULL::text, NULL::text, NULL::text,
                  NULL::text, NULL::text;
    END IF;

    -- The lanes' next holders: each made available, or, when this worker runs its task and has a
    -- free slot in its queue, claimed for it in the same update (one row version, not two). In a
    -- wider lane an older holder may still wait for a worker: it is a candidate too, and the
    -- oldest go first, so that a lane's stages start in the order they were admitted.
    IF v_lanes IS NOT NULL THEN
        SELECT w.features INTO v_features FROM workers w WHERE w.id = p_worker;
        RETURN QUERY
        WITH admitted AS MATERIALIZED (
            SELECT * FROM lane_admissions(v_lanes)
        ), candidates AS (
            SELECT a.id, a.slot, true AS admitted FROM admitted a
            UNION ALL
            -- (`lane_holds`: a row whose job holds that lane and slot, each job looked up by its
            -- key in a subquery; see lane_admissions.sql)
            SELECT DISTINCT h.job_id, h.lane_slot, false FROM lane_holds h
            WHERE h.lane IN (SELECT j.lane FROM admitted a JOIN jobs j ON j.id = a.id WHERE NOT a.first)
              AND (SELECT o.lane = h.lane AND o.lane_slot = h.lane_slot AND o.state = 'available'
                   FROM jobs o WHERE o.id = h.job_id)
        ), heads AS (
            -- Each candidate looked up by its key: a join was planned, on a small table, as a
            -- hash of every entry of the primary key.
            SELECT c.id, c.slot, c.admitted, j.queue, j.lane_ready_at, j.runnable
            FROM candidates c
            CROSS JOIN LATERAL (
                SELECT j.queue, j.lane_ready_at,
                       (p_tasks IS NULL OR NOT (j.chain -> j.stage ? 'task')
                        OR j.chain -> j.stage ->> 'task' = ANY (p_tasks))
                       -- a chain this worker reads (migration 25)
                       AND (j.features IS NULL OR j.features <@ v_features)
                       -- a rate-limited stage starts with a token, which only a claim takes
                       AND j.rate_key = ''
                       -- the next holder of a lane in a paused queue waits for resume, like any job.
                       AND NOT EXISTS (SELECT 1 FROM paused_queues q WHERE q.queue = j.queue) AS runnable
                FROM jobs j WHERE j.id = c.id OFFSET 0
            ) j
        ), decided AS (
            SELECT r.id, r.queue, r.slot, r.admitted, r.runnable AND r.n <= coalesce(s.slots, 0) AS taken
            FROM (SELECT heads.*, row_number() OVER (PARTITION BY heads.queue, heads.runnable
                                                     ORDER BY heads.lane_ready_at, heads.id) AS n
                  FROM heads) r
            LEFT JOIN unnest(p_queues, p_slots) AS s(queue, slots) ON s.queue = r.queue
        ), moved AS (
            UPDATE jobs j SET
                state = (CASE WHEN d.taken THEN 'running' ELSE 'available' END)::job_state,
                run_at = CASE WHEN d.admitted THEN now() ELSE j.run_at END,
                lane_slot = d.slot,
                attempt = CASE WHEN d.taken THEN j.attempt + 1 ELSE j.attempt END,
                worker_id = CASE WHEN d.taken THEN p_worker ELSE j.worker_id END,
                attempted_at = CASE WHEN d.taken THEN now() ELSE j.attempted_at END
            FROM decided d
            -- An older holder is taken only if no worker claimed it meanwhile (re-checked on the
            -- row as it is once a claim holding it commits); one not taken is left as it is.
            -- (the ids as an index condition too: joined alone, the update could scan the key whole)
            WHERE j.id = d.id AND j.id = ANY (ARRAY(SELECT d.id FROM decided d))
              AND (d.admitted OR (d.taken AND j.state = 'available'))
            RETURNING d.taken, d.admitted, j.id, j.queue, j.stage, j.attempt, j.chain::text AS chain,
                (CASE WHEN jsonb_array_length(j.results) = 0 THEN j.input ELSE j.results -> -1 -> 'output' END)::text AS input,
                CASE WHEN jsonb_array_length(j.results) = 0 THEN NULL ELSE j.results::text END AS results,
                j.metadata::text AS metadata, j.group_output::text AS group_output, j.lane, j.lane_slot
        ), held AS (
            -- Each new holder's row (`lane_holds`; see lane_admissions.sql).
            INSERT INTO lane_holds (part, lane, lane_slot, job_id)
            SELECT ready_slot(), m.lane, m.lane_slot, m.id FROM moved m WHERE m.admitted
        )
        SELECT 'claimed', m.id, m.queue, m.stage, m.attempt, m.chain, m.input, m.results, m.metadata, m.group_output
        FROM moved m WHERE m.taken
        UNION ALL
        -- Those admitted and not taken wait for any worker of their queue.
        SELECT DISTINCT 'wake', NULL::bigint, m.queue, NULL::int, NULL::int, NULL::text, NULL::text,
               NULL::text, NULL::text, NULL::text
        FROM moved m WHERE NOT m.taken AND m.admitted;
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
        UNION ALL
        SELECT 'handed-on', a.id, NULL FROM unnest(v_applied) a WHERE a.id = ANY (v_handed)
    ) x;
END $$;
