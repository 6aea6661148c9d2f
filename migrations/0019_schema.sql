-- Baton's schema at version 19, the first release's: tables, types, sequences and indexes. The
-- functions live in functions/, one file each, and are replaced on every migrate.
--
-- The development steps 1–18 and the job ids of step 19 are folded in here; a later change is a
-- numbered file after this one (0020_…). A schema migrated by a development build before this
-- file existed is refused by `baton migrate` unless it reached version 19 (docs/operations.md,
-- "Upgrade").
--
-- Names are unqualified: `baton migrate` runs this file with `search_path` set to Baton's schema
-- (`baton` unless configured). To apply it by hand:
--   psql "$DATABASE_URL" -c 'CREATE SCHEMA IF NOT EXISTS baton' -c 'SET search_path TO baton' -f 0019_schema.sql
-- (then every file of functions/, and `INSERT INTO migrations` as Migrator.swift does).

CREATE TYPE job_state AS ENUM (
    'scheduled', 'available', 'running', 'retryable', 'waiting', 'completed', 'discarded', 'cancelled'
);

-- Job ids that no failover or restore can give out twice. An identity column counts on its
-- sequence: a standby promoted after losing the last seconds of WAL, or a restore to an earlier
-- point, starts again from where its copy stood, and gives the ids of jobs it never saw to new jobs
-- (measured: docs/benchmarks.md#job-ids-and-a-failover), so that a caller holding an id reads
-- another job, and the `http` task's `Idempotency-Key: <id>-<stage>` reaches a partner API from two
-- jobs.
--
-- An id is the time it was drawn, in milliseconds since 2026-01-01 UTC, times 4096, plus a counter
-- that cycles through 0–4095: a lost sequence only repeats a counter, and the time has moved on by
-- the failover or the restore. Two ids could only meet if the database's clock read the same
-- millisecond twice with the counter at the same place: the clock set back by more than the time
-- since the lost jobs, or 4096 ids drawn within one millisecond (far beyond Baton's rate:
-- docs/benchmarks.md#job-ids-and-a-failover).
-- Ids stay below 2^53 until 2095, so JavaScript's numbers hold them exactly, and they grow with
-- time, as the keyset pages (newest first) and the claim's tie-breaks expect.
CREATE SEQUENCE job_id_counter MINVALUE 0 MAXVALUE 4095 START 0 CYCLE;

-- The counter is named with its schema, written in when the function is made: the function stays
-- plain SQL the planner inlines into the insert (a `SET search_path` would make every id a call).
-- It is here rather than in functions/ because the jobs table's default names it; it runs inside
-- `enqueue` and `apply_outcomes_for`, which set `jit = off` for it.
DO $do$ BEGIN
    EXECUTE format($f$
        CREATE FUNCTION new_job_id() RETURNS bigint LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
            SELECT (floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1767225600000) * 4096
                   + nextval(%L)
        $$ $f$, current_schema() || '.job_id_counter');
END $do$;

-- One row per job. The chain is stored as written; `stage` is the index of the current stage and
-- `results` holds one entry per finished stage: {"output", "attempts", "started_at", "finished_at"}.
CREATE TABLE jobs (
    id              bigint PRIMARY KEY DEFAULT new_job_id(),
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
    -- a fingerprint of the API token that enqueued it, so that an `enqueue` token reads its own jobs
    enqueued_by     text,
    -- a snoozed stage runs again later without spending an attempt (StageContext's `Snooze`): the
    -- job is `retryable` (so a laned stage keeps its lane) with this set, which says why it waits;
    -- apply_outcomes sets it with every outcome it applies
    snoozed         boolean     NOT NULL DEFAULT false,
    -- unique jobs: the key (its queue, your key or its first task and args, and its time window,
    -- computed by the enqueuer) and the states in which it holds it (always every unfinished one,
    -- and the final states the rule names); `jobs_unique` admits one holder per key, and `enqueue`
    -- answers the holder instead of inserting another. Moving between unfinished states never
    -- changes whether a job holds its key, so only a retry (from a final state outside the rule) can
    -- meet a holder: `retry_job` skips it.
    unique_key      text,
    unique_states   job_state[],
    -- stages routed to queues of their own (a pool of GPU workers): while such a stage is current,
    -- `queue` is its queue, so that only workers serving it claim the job, and this keeps the job's
    -- own; NULL while no stage has left the job's queue
    home_queue      text,
    -- a lane admits at most its width of stages at once: each holder takes one of the lane's slots
    -- 0…width−1, handed out under the lane's advisory lock (`lane_admissions`), lowest free first
    lane_slot       smallint    NOT NULL DEFAULT 0,
    -- the current stage's rate limit key ('' for none), set whenever the stage changes
    rate_key        text        NOT NULL DEFAULT '',
    CONSTRAINT stage_in_chain CHECK (stage >= 0 AND stage < stage_count),
    CONSTRAINT unique_states_hold_while_unfinished CHECK (
        unique_key IS NULL OR unique_states @> '{scheduled,available,running,retryable,waiting}')
) WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 0);

-- claim: a plain scan of what is claimable, per queue, in pickup order. Keyed by rate_key too, so
-- that claims of unlimited stages never walk over limited ones, and each key's stages are claimed
-- from their own range: a stage waiting for a token stays `available` and costs nothing meanwhile.
CREATE INDEX jobs_available ON jobs (queue, rate_key, priority, run_at, id) WHERE state = 'available';
-- promoteDue: scheduled and retryable jobs by due time.
CREATE INDEX jobs_due ON jobs (run_at) WHERE state IN ('scheduled', 'retryable');
-- apply_outcomes' guard and rescueLost: running jobs by worker, then id. The id matters: every row
-- a worker ever ran leaves a dead entry under its worker's key until vacuum, and a guard that
-- looked up the worker alone would step over all of them.
CREATE INDEX jobs_running ON jobs (worker_id, id) WHERE state = 'running';
-- promoteLane: the waiting queue of each lane, oldest first.
CREATE INDEX jobs_lane_waiting ON jobs (lane, lane_ready_at, id) WHERE state = 'waiting' AND lane IS NOT NULL;
-- The lane invariant: at most `width` jobs per lane hold it (available, running or retryable), one
-- per slot; a narrowed lane lets its holders finish and admits again once fewer hold it.
CREATE UNIQUE INDEX jobs_lane_head ON jobs (lane, lane_slot)
    WHERE lane IS NOT NULL AND state IN ('available', 'running', 'retryable');
-- enqueue: same key, same job.
CREATE UNIQUE INDEX jobs_idempotency_key ON jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;
-- Finished jobs by final state and age: each state is pruned by its own retention (a day's
-- completed jobs are not found by walking past two weeks of discarded ones), and bulk operations
-- find the dead letters by when they failed.
CREATE INDEX jobs_finished ON jobs (state, finished_at) WHERE state IN ('completed', 'discarded', 'cancelled');
-- group fan-in: members of a parent.
CREATE INDEX jobs_parent ON jobs (parent_id, parent_stage, member_index) WHERE parent_id IS NOT NULL;
-- Unfinished, discarded and cancelled jobs by state, newest first: the overview's counts of
-- unfinished jobs per queue and state as an index-only scan of them alone (finished ones come from
-- the history), and listings filtered by those states without walking past the completed majority.
CREATE INDEX jobs_state_id ON jobs (state, id, queue) WHERE state <> 'completed';
-- expire_waits: jobs awaiting a signal, by the end of their wait. (A waiting job with a lane waits
-- in it; one with pending members is a group's parent; the rest await a signal.)
CREATE INDEX jobs_awaiting ON jobs (run_at) WHERE state = 'waiting' AND lane IS NULL AND pending IS NULL;
-- One holder per unique key.
CREATE UNIQUE INDEX jobs_unique ON jobs (unique_key) WHERE unique_key IS NOT NULL AND state = ANY (unique_states);

-- One row per live worker process; its heartbeat is the lease of every job it runs.
CREATE TABLE workers (
    id           text PRIMARY KEY,
    host         text        NOT NULL,
    pid          int         NOT NULL,
    queues       text[]      NOT NULL,
    tasks        text[]      NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    -- The jobs it holds (running, or waiting for their outcome to be written), written with every
    -- heartbeat. A claim, a lane hand-off claimed inside apply_outcomes or a hop can commit while
    -- its answer is lost with the connection that carried it: the job is then running under a live
    -- worker that does not know it has it. Maintenance puts back a job running under a live worker
    -- that was claimed more than a lease before the worker's last heartbeat and is not in this list
    -- (Store.orphanedStages): the worker never ran it, so its attempt is not counted.
    holds        bigint[]    NOT NULL DEFAULT '{}',
    -- The worker's own lease, so that "live" means what it promises (a heartbeat within it), for
    -- the control plane's "why is this job not running?" and the dashboard's list of workers.
    lease        interval    NOT NULL DEFAULT '15 seconds'
);

-- Who runs maintenance (rescue, scheduling, pruning): one row per chore, held for a short lease
-- and renewed by its holder. A frozen holder (paused, partitioned) loses it when the lease runs
-- out, unlike a session advisory lock, which its open connection would keep.
CREATE TABLE leaders (
    name       text PRIMARY KEY,
    worker_id  text        NOT NULL,
    expires_at timestamptz NOT NULL
);

-- One applied outcome, as `apply_outcomes` collects them.
CREATE TYPE applied_outcome AS (
    id bigint, kind text, state job_state, queue text, watched boolean, parent_id bigint
);

-- Paused queues: workers claim nothing from a queue listed here (pause, resume).
CREATE TABLE paused_queues (
    queue     text PRIMARY KEY,
    paused_at timestamptz NOT NULL DEFAULT now()
);

-- Per-minute history per queue: what the dashboard reads without counting the jobs table. Jobs
-- completed, discarded and cancelled, and how long stages waited to be picked up, as a histogram:
-- `wait_10ms` counts pickups within 10 ms, `wait_25ms` those within 25 ms but not 10 ms, and so on
-- (`Store.waitBuckets`); `wait_more` those over 30 minutes. Columns, not an array, so that a day of
-- it (1,440 rows per queue) sums quickly (docs/benchmarks.md#pages). Workers add what they
-- completed and discarded to the rows of the minutes they saw, one statement every few seconds for
-- all their queues (never one per job), rows in key order so that two workers' writes cannot
-- deadlock; `cancel_job` adds the jobs it cancels. Pruned with the jobs: kept as long as they are,
-- at least 25 hours.
CREATE TABLE queue_minutes (
    minute      timestamptz NOT NULL,
    queue       text        NOT NULL,
    completed   int         NOT NULL DEFAULT 0,
    discarded   int         NOT NULL DEFAULT 0,
    cancelled   int         NOT NULL DEFAULT 0,
    wait_10ms   int         NOT NULL DEFAULT 0,
    wait_25ms   int         NOT NULL DEFAULT 0,
    wait_50ms   int         NOT NULL DEFAULT 0,
    wait_100ms  int         NOT NULL DEFAULT 0,
    wait_250ms  int         NOT NULL DEFAULT 0,
    wait_500ms  int         NOT NULL DEFAULT 0,
    wait_1s     int         NOT NULL DEFAULT 0,
    wait_2500ms int         NOT NULL DEFAULT 0,
    wait_5s     int         NOT NULL DEFAULT 0,
    wait_10s    int         NOT NULL DEFAULT 0,
    wait_30s    int         NOT NULL DEFAULT 0,
    wait_1m     int         NOT NULL DEFAULT 0,
    wait_5m     int         NOT NULL DEFAULT 0,
    wait_30m    int         NOT NULL DEFAULT 0,
    wait_more   int         NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, queue)
);

-- Schedules. A schedule enqueues a job at each slot of its cron expression in its time zone.
-- `request` is the job as it was given (the JSON of `POST /v1/jobs`, shown back); `queue`,
-- `priority`, `metadata`, `input` and `chain` are that job as the store enqueues it. `source` says
-- who owns it: the settings file (what the file lists is what runs) or the API. Each slot's job
-- carries the idempotency key `schedule:NAME:SLOT`, so the jobs table's unique index admits one job
-- per slot whatever the number of workers, and the slot and `next_run_at` advance in the same
-- transaction as the enqueue.
CREATE TABLE schedules (
    name        text        PRIMARY KEY,
    cron        text        NOT NULL,
    time_zone   text        NOT NULL DEFAULT 'UTC',
    misfire     text        NOT NULL DEFAULT 'skip',
    paused      boolean     NOT NULL DEFAULT false,
    source      text        NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'settings')),
    request     jsonb,
    queue       text        NOT NULL,
    priority    int         NOT NULL DEFAULT 0,
    metadata    jsonb       NOT NULL DEFAULT '{}',
    input       jsonb       NOT NULL DEFAULT 'null',
    chain       jsonb       NOT NULL,
    -- The next slot; NULL: none (an expression that never fires again).
    next_run_at timestamptz,
    -- The last slot enqueued (or run by hand), and its job.
    last_run_at timestamptz,
    last_job_id bigint,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
-- What is due: the runner's one query a tick.
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE NOT paused;

-- A running stage's progress and checkpoint: one row per job and stage whose task reported progress
-- (StageContext.progress). The worker running the stage keeps the latest report in memory and
-- writes it at most once a second, and once more before the attempt's outcome, only while that
-- attempt still runs there (so a worker that lost its lease cannot overwrite a newer attempt's).
-- `checkpoint` is what the next attempt at the same stage resumes from: a failure, a timeout, a
-- lost worker or a retry by hand keep it. The row goes with its job.
CREATE TABLE job_progress (
    job_id     bigint      NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    stage      int         NOT NULL,
    -- the attempt that wrote it
    attempt    int         NOT NULL,
    fraction   double precision CHECK (fraction BETWEEN 0 AND 1),
    message    text,
    checkpoint jsonb,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, stage)
);

-- Signals, for stages that wait for the outside world. An await stage (`{"await": NAME,
-- "timeout_ms"?, "max_attempts"?}` in the chain) is claimed like any stage; the worker finds no
-- signal for it and the job waits: state `waiting`, no lane, no pending members, no worker, `run_at`
-- the end of its wait (`jobs_awaiting`). A signal delivered then makes it available again
-- (`deliver_signal`), and the worker that claims it hands the payload on as the stage's output. A
-- signal delivered earlier is kept here and found when the chain reaches the stage. One signal per
-- job and name: a repeated delivery changes nothing.
CREATE TABLE job_signals (
    job_id      bigint      NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    name        text        NOT NULL,
    payload     jsonb       NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, name)
);

-- Keys the database holds for Baton's processes, made here from PostgreSQL's strong random source
-- (gen_random_uuid: 122 random bits each).
--   signal-token     the HMAC key of the one-time tokens that let a third party deliver one signal
--                    to one job without an API token
--   api-fingerprint  the HMAC key of the token fingerprints the control plane stores with the jobs
--                    a token enqueues (`enqueued_by`), used after the keys of
--                    `api.fingerprint-keys`, if any
CREATE TABLE keys (
    name  text  PRIMARY KEY,
    value bytea NOT NULL
);
INSERT INTO keys (name, value)
SELECT name, decode(replace(gen_random_uuid()::text || gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex')
FROM unnest(ARRAY['signal-token', 'api-fingerprint']) AS name;

-- What operators set per lane. `lane` is a lane's name, or a prefix ending in `*` that sets every
-- lane it starts (`customer-*`); a lane's own entry wins, then the longest prefix. No entry: width 1.
-- `source`: `api` (set through the API, CLI or dashboard) or `settings` (a settings file's `lanes:`,
-- replaced whenever a process with that file starts).
CREATE TABLE lane_settings (
    lane        text PRIMARY KEY,
    width       int NOT NULL CHECK (width BETWEEN 1 AND 10000),
    source      text NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'settings')),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
-- The prefixes, read at each hand-over of a lane without its own entry: few rows, one index.
CREATE INDEX lane_settings_prefixes ON lane_settings (lane) WHERE right(lane, 1) = '*';

-- Rate limits. A task stage may name a rate limit key (`"rate": "partner-api"`); a stage counts
-- against its key when a worker claims it (`claim_for`), which takes one of the key's tokens: a
-- bucket of `burst` tokens refilled at `rate` per `per_ms`, read and written under the row's lock,
-- so the bound holds across every worker.
CREATE TABLE rate_limits (
    key         text PRIMARY KEY,
    rate        int NOT NULL CHECK (rate BETWEEN 1 AND 1000000),
    per_ms      bigint NOT NULL CHECK (per_ms BETWEEN 1 AND 2678400000),
    burst       int NOT NULL CHECK (burst BETWEEN 1 AND 1000000),
    tokens      float8 NOT NULL,
    refilled_at timestamptz NOT NULL DEFAULT now(),
    source      text NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'settings', 'prefix')),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
-- A key ending in `*` is a prefix: every key it starts that has no limit of its own gets a bucket
-- of its own with the prefix's rate (`customer-*`: each customer its own 10 a second), made by the
-- first claim that needs it (`source` 'prefix'; the longest prefix wins).
CREATE INDEX rate_limits_prefixes ON rate_limits (key) WHERE right(key, 1) = '*';
-- A limit whose key is `queue:<name>` or `lane:<name>` (or a prefix of either, `lane:customer-*`)
-- binds every task stage of that queue or lane that names no key of its own: such a stage's
-- `rate_key` is resolved to it when the stage becomes current (`stage_rate_key`). Every flush and
-- enqueue first asks whether any such limit exists at all, through this index, so that a database
-- without them pays one empty index probe per statement, not a look-up per stage.
CREATE INDEX rate_limits_scoped ON rate_limits (key)
    WHERE starts_with(key, 'queue:') OR starts_with(key, 'lane:');

-- The audit trail: every change made through the control plane (API, CLI, dashboard), written in
-- the transaction of the change, so that a change is recorded exactly when it happened.
--   actor       the token's name (never its secret), or what a Swift caller names itself
--   request_id  the request's X-Request-Id, to find its log line
--   action      the operation (`cancelJob`, `pauseQueue`, `putSchedule`…)
--   target      what it acted on: `job:42`, `jobs` (a bulk batch), `queue:billing`,
--               `schedule:nightly`, `lane:tenant-*`, `rate-limit:partner-api`
--   details     what changed, as JSON (json, not jsonb: kept as written)
-- Pruned by its own retention (`worker.retention-audit`), oldest first through `audit_events_at`.
CREATE TABLE audit_events (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT now(),
    actor      text NOT NULL,
    request_id text,
    action     text NOT NULL,
    target     text NOT NULL,
    details    json NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX audit_events_target ON audit_events (target, id);

-- Where a deep lane's waiting jobs begin. A lane admits its oldest waiting jobs through
-- `jobs_lane_waiting`, from the start of the lane's range. Every job admitted since the last vacuum
-- left a dead entry there, at the front of that range: with a million jobs queued in 100 lanes a
-- probe read several times the index pages it needed, and an admission cost far more than it did
-- with a hundred thousand (docs/benchmarks.md#issue-20-compiled-at-every-flush-2026-11-27; the
-- floor's effect: docs/benchmarks.md#issue-20-a-floor-per-lane-2026-11-27). A lane's floor is a
-- position (`lane_ready_at`, `id`) no job waiting in it lies below: the admission probes from there,
-- past the dead entries.
--
-- An admission writes, as its lane's floor, the position of a job it admits, at one admission in 16
-- (chosen by the job's id): a floor a few admissions old is still below every waiting job, and
-- keeps a probe within a few dead entries, one index page, at a sixteenth of the writes. Entries
-- take their time after the lane's lock, above any floor written before; the two paths that enter a
-- job at an older position delete the floor under that lock (a repeated stage keeping its place, a
-- scheduled job entering at its due time). The maintenance leader deletes every floor each minute
-- and lets those lanes admit (`reset_lane_floors`): rows do not pile up for lanes seen once, and a
-- job that entered below a floor anyway (the database's clock stepped back) is at most that late.
-- `fillfactor`: a deep lane's row is rewritten often; room on its page keeps that a HOT update.
CREATE TABLE lane_floors (
    lane      text PRIMARY KEY,
    ready_at  timestamptz NOT NULL,
    id        bigint NOT NULL
) WITH (fillfactor = 50);
