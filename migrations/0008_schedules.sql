-- Baton schema, version 8: schedules.
--
-- A schedule enqueues a job at each slot of its cron expression in its time zone. `request` is
-- the job as it was given (the JSON of `POST /v1/jobs`, shown back); `queue`, `priority`,
-- `metadata`, `input` and `chain` are that job as the store enqueues it. `source` says who owns
-- it: the settings file (what the file lists is what runs) or the API. Each slot's job carries
-- the idempotency key `schedule:NAME:SLOT`, so the jobs table's unique index admits one job per
-- slot whatever the number of workers, and the slot and `next_run_at` advance in the same
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
