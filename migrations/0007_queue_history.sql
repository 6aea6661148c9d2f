-- Baton schema, version 7: what the dashboard reads without counting the jobs table.
--
-- Per-minute history per queue: jobs completed and discarded, and how long stages waited to be
-- picked up (a histogram: `waits[i]` counts pickups within the i-th bound of
-- `Store.waitBucketBounds`, the last without bound). Each worker writes its own rows, one statement
-- every few seconds for all its queues (never one per job), so workers never wait on each other's
-- rows; readers sum over workers. Pruned with the jobs: kept as long as they are, at least 25 hours.
CREATE TABLE queue_minutes (
    minute    timestamptz NOT NULL,
    queue     text        NOT NULL,
    worker_id text        NOT NULL,
    completed int         NOT NULL DEFAULT 0,
    discarded int         NOT NULL DEFAULT 0,
    waits     int[]       NOT NULL,
    PRIMARY KEY (minute, queue, worker_id)
);

-- The jobs of each queue per state, but completed ones (which the history counts): the overview's
-- counts as an index-only scan of live, discarded and cancelled jobs.
CREATE INDEX jobs_queue_state ON jobs (queue, state) WHERE state <> 'completed';
