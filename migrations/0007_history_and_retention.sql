-- Baton schema, version 7: what the dashboard reads without counting the jobs table, and finished jobs kept by state.
--
-- Per-minute history per queue: jobs completed, discarded and cancelled, and how long stages waited to be
-- picked up, as a histogram: `wait_10ms` counts pickups within 10 ms, `wait_25ms` those within
-- 25 ms but not 10 ms, and so on (`Store.waitBuckets`); `wait_more` those over 30 minutes. Columns,
-- not an array, so that a day of it (1,440 rows per queue) sums in a few milliseconds. Workers add
-- what they completed and discarded to the rows of the minutes they saw, one statement every few
-- seconds for all their queues (never one per job), rows in key order so that two workers' writes
-- cannot deadlock; `cancel_job` adds the jobs it cancels. Pruned with the jobs: kept as long as
-- they are, at least 25 hours.
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

-- Unfinished, discarded and cancelled jobs by state, newest first: the overview's counts of
-- unfinished jobs per queue and state as an index-only scan of them alone (finished ones come from
-- the history), and listings filtered by those states without walking past the completed majority.
CREATE INDEX jobs_state_id ON jobs (state, id, queue) WHERE state <> 'completed';

-- Finished jobs by final state and age: each state is pruned by its own retention (a day's
-- completed jobs are not found by walking past two weeks of discarded ones), and bulk operations
-- find the dead letters by when they failed. Replaces 0001's index on finished_at alone; building
-- it locks out writes to the jobs table while it runs (seconds per million finished jobs).
DROP INDEX jobs_finished;
CREATE INDEX jobs_finished ON jobs (state, finished_at) WHERE state IN ('completed', 'discarded', 'cancelled');
