-- Claim up to `p_limit` available jobs of a queue for a worker, in priority, due time and id order,
-- skipping rows other workers hold; nothing from a paused queue (one primary-key probe). The rows
-- come from `ready` (migration 20), which the claim deletes as it takes them, and the jobs they name
-- become `running`. A row counts only while its job is still `available` in this queue with this
-- rate limit key (one primary-key probe each): one that no longer says so (a cancelled job, a
-- lane's older holder handed to a worker by `apply_outcomes_for`) is passed over, not taken in
-- place of a claimable one, and goes with its slot (`rotate_ready`); whatever changed the job wrote
-- it a new row if it is available elsewhere. Lanes cost nothing here (a job waiting for its lane
-- has no row). A function so that its plan is cached per
-- connection: planning this statement costs more than running it on an idle queue. `waited`:
-- seconds since the stage became claimable (`run_at`, or the job's creation when a caller backdated
-- `run_at`), the worker's pickup latency.
-- `p_tasks`: the tasks the worker runs; a task stage of another task is left for a worker that
-- runs it (group and await stages are every worker's). NULL: any. A job whose chain uses features
-- (migration 25) that the worker's row does not list is left for a worker that reads them.
--
-- Stages without a rate limit key first; then, while slots are left, each key with stages
-- available here (found by a skip scan of the index: one probe per key) takes what its bucket
-- allows: under the key's lock (`lock_rate_keys`), its tokens (`rate_tokens`, migration 22)
-- refilled to now, one spent per stage claimed, written back once. A key with no limit set
-- takes a bucket of its own from its longest prefix's limit (`customer-*`), if one is set; else it
-- does not limit. When a key ran out of tokens with stages still waiting, a last row (id NULL)
-- says in `waited` how many seconds until the first of them has one again: the worker claims then,
-- and nothing runs for the stages in between.
--
-- One plan, made once per connection (`plan_cache_mode = force_generic_plan`), whose every step
-- finds its rows through an index (`enable_seqscan = off`): the claimed rows are updated by
-- primary key, from the array of ids the claim's scan locked. Joined to that scan instead, the
-- update had two plans: a custom one, made again at every call (its planning cost more than the
-- claim of one job costs to run: docs/benchmarks.md#planned-at-every-call), and a generic one
-- hashing a sequential scan of all of `jobs`, which PostgreSQL took whenever it looked no dearer
-- (docs/benchmarks.md#issue-21-part-5-again-the-claims-plan-2026-11-27).
CREATE OR REPLACE FUNCTION claim_for(p_queue text, p_limit int, p_worker text, p_tasks text[])
RETURNS TABLE (id bigint, stage int, attempt int, chain text, input text, results text, metadata text,
               group_output text, waited float8)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off
    SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
    v_left int := p_limit;
    v_taken int;
    v_key text;
    v_bucket rate_limits;
    v_stored boolean;
    v_tokens float8;
    v_refilled timestamptz;
    v_next float8;
    v_features text[];
BEGIN
    IF EXISTS (SELECT 1 FROM paused_queues q WHERE q.queue = p_queue) THEN
        RETURN;
    END IF;
    -- The chain features the worker reads (migration 25; NULL, none: a worker that registered
    -- none, or no row): a job whose chain uses others is left for a worker that reads them.
    SELECT w.features INTO v_features FROM workers w WHERE w.id = p_worker;
    FOR v_key IN
        -- '' (no key) first, then each key with stages available here: one index probe each.
        WITH RECURSIVE k(key) AS (
            SELECT ''::text
            UNION ALL
            SELECT (SELECT min(n.rate_key) FROM ready n WHERE n.queue = p_queue AND n.rate_key > k.key)
            FROM k WHERE k.key IS NOT NULL
        )
        SELECT k.key FROM k WHERE k.key IS NOT NULL
    LOOP
        EXIT WHEN v_left <= 0;
        v_bucket := NULL;
        IF v_key <> '' THEN
            -- A key with no limit of its own under a prefix's (`customer-*`): its bucket, made full.
            INSERT INTO rate_limits (key, rate, per_ms, burst, tokens, source)
            SELECT v_key, t.rate, t.per_ms, t.burst, t.burst, 'prefix' FROM rate_limits t
            WHERE right(t.key, 1) = '*' AND starts_with(v_key, left(t.key, -1))
              AND NOT EXISTS (SELECT 1 FROM rate_limits o WHERE o.key = v_key)
            ORDER BY length(t.key) DESC LIMIT 1
            ON CONFLICT (key) DO NOTHING;
            SELECT * INTO v_bucket FROM rate_limits r WHERE r.key = v_key;
            IF v_bucket.key IS NOT NULL THEN
                PERFORM lock_rate_keys(ARRAY[v_key]);
                -- Where the bucket stands (`rate_limits` has where it starts), refilled to now.
                SELECT t.tokens, t.refilled_at INTO v_tokens, v_refilled FROM rate_tokens t WHERE t.key = v_key;
                v_stored := FOUND;
                IF v_stored THEN
                    v_bucket.tokens := v_tokens;
                    v_bucket.refilled_at := v_refilled;
                END IF;
                v_bucket.tokens := least(v_bucket.burst, v_bucket.tokens
                    + extract(epoch FROM now() - v_bucket.refilled_at) * 1000.0 * v_bucket.rate / v_bucket.per_ms);
            END IF;
        END IF;
        v_taken := 0;
        IF v_bucket.key IS NULL OR v_bucket.tokens >= 1 THEN
            RETURN QUERY
            WITH next AS (
                SELECT n.tableoid AS part, n.ctid AS place FROM ready n
                WHERE n.queue = p_queue AND n.rate_key = v_key AND n.run_at <= now()
                  AND (p_tasks IS NULL OR n.task IS NULL OR n.task = ANY (p_tasks))
                  -- a subquery, not a join: one probe of the job by its key for each row read
                  AND (SELECT s.state = 'available' AND s.queue = p_queue AND s.rate_key = v_key
                              AND (s.features IS NULL OR s.features <@ v_features)
                       FROM jobs s WHERE s.id = n.job_id)
                -- (`turn`: the due time, or a fair queue's turn: migration 28)
                ORDER BY n.priority, n.turn, n.job_id
                LIMIT CASE WHEN v_bucket.key IS NULL THEN v_left ELSE least(v_left, floor(v_bucket.tokens)::int) END
                FOR UPDATE OF n SKIP LOCKED
            ), taken AS (
                -- each row where the scan found it
                DELETE FROM ready r USING next WHERE r.tableoid = next.part AND r.ctid = next.place
                RETURNING r.job_id
            ), moved AS (
                UPDATE jobs j
                SET state = 'running', attempt = j.attempt + 1, worker_id = p_worker,
                    -- (a group or map stage handing on its members' outputs keeps the time it fanned
                    -- out at: its run took from then, not from this claim)
                    attempted_at = CASE WHEN j.group_output IS NULL THEN now() ELSE j.attempted_at END
                -- By primary key only: the check on the row, `IS TRUE`, is no index condition.
                -- Written as one, it let the plan find the rows through `jobs_state_id`'s
                -- `available` range, every job's old entry included (40 ms a claim during a held
                -- horizon: docs/benchmarks.md#issue-46-the-claims-own-table-2026-12-06). The check
                -- is made again on the row as it is once locked: a job cancelled meanwhile is left.
                WHERE j.id = ANY (ARRAY(SELECT taken.job_id FROM taken))
                  AND (j.state = 'available' AND j.queue = p_queue AND j.rate_key = v_key) IS TRUE
                RETURNING j.id, j.stage, j.attempt, j.chain::text AS chain,
                    (CASE WHEN jsonb_array_length(j.results) = 0 THEN j.input ELSE j.results -> -1 -> 'output' END)::text
                        AS input,
                    CASE WHEN jsonb_array_length(j.results) = 0 THEN NULL ELSE j.results::text END AS results,
                    j.metadata::text AS metadata, j.group_output::text AS group_output,
                    extract(epoch FROM now() - greatest(j.run_at, j.created_at))::float8 AS waited,
                    j.priority, j.run_at
            )
            -- In the claim's order (the worker starts them in this order: a lane's holders oldest
            -- first), not the primary key's the update found them in.
            SELECT m.id, m.stage, m.attempt, m.chain, m.input, m.results, m.metadata, m.group_output, m.waited
            FROM moved m ORDER BY m.priority, m.run_at, m.id;
            GET DIAGNOSTICS v_taken = ROW_COUNT;
            v_left := v_left - v_taken;
            IF v_bucket.key IS NOT NULL AND v_taken > 0 THEN
                IF v_stored THEN
                    UPDATE rate_tokens t SET tokens = v_bucket.tokens - v_taken, refilled_at = now()
                    WHERE t.key = v_key;
                ELSE
                    INSERT INTO rate_tokens (slot, key, tokens, refilled_at)
                    VALUES (ready_slot(), v_key, v_bucket.tokens - v_taken, now());
                END IF;
            END IF;
        END IF;
        -- Out of tokens: when the next one comes (a stage may still wait; the worker looks then).
        IF v_bucket.key IS NOT NULL AND v_bucket.tokens - v_taken < 1 THEN
            v_next := least(coalesce(v_next, 'infinity'::float8),
                            (1 - (v_bucket.tokens - v_taken)) * v_bucket.per_ms / v_bucket.rate / 1000.0);
        END IF;
    END LOOP;
    IF v_next IS NOT NULL THEN
        RETURN QUERY SELECT NULL::bigint, NULL::int, NULL::int, NULL::text, NULL::text, NULL::text, NULL::text,
                            NULL::text, v_next;
    END IF;
END $$;
