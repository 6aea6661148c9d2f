-- Baton schema, version 1: jobs, lanes, workers.
--
-- Names are unqualified: `baton migrate` runs this file with `search_path` set to Baton's schema
-- (`baton` unless configured). To apply it by hand:
--   psql "$DATABASE_URL" -c 'CREATE SCHEMA IF NOT EXISTS baton' -c 'SET search_path TO baton' -f 0001_jobs.sql
-- Tables, types and indexes only: functions live in functions/, one file each.

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

-- One applied outcome, as `apply_outcomes` collects them.
CREATE TYPE applied_outcome AS (
    id bigint, kind text, state job_state, queue text, watched boolean, parent_id bigint
);
