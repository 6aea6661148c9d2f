-- Claims read a table of their own, which is emptied by truncation, not by vacuum (issue 46;
-- docs/storage.md has the reason and the figures).
--
-- Until version 19 a claim scanned `jobs_available`, a partial index of `jobs`. Every job claimed
-- left a dead entry at the front of that index, which only vacuum removes; while something holds
-- the cluster's xmin horizon (a long transaction, a `pg_dump`, a replication slot), vacuum cannot,
-- and each claim stepped over every job claimed since the horizon stopped: 800 jobs/s fell to 40 %
-- of that within five minutes (docs/benchmarks.md#issue-46-a-held-xmin-horizon-measured-by-the-bench-2026-11-29).
--
-- `ready` holds one row per claimable stage, in the claim's order. A claim deletes the rows it
-- takes. The table is split into four partitions by `slot`: rows go to the slot of the second they
-- are written in (`ready_slot()`, seconds modulo 4), and the maintenance leader empties each slot
-- that is neither the current one nor the one before (`rotate_ready`): under its exclusive lock it
-- moves the slot's remaining rows (if they are few) into the current one and truncates it, which removes the
-- slot's dead rows whatever the horizon. So a claim steps over at most the rows claimed in the last
-- two seconds or so.
--
-- A row is a hint, `jobs` the truth: a claim takes a job only if it is still `available` in that
-- queue with that rate limit key, and passes over rows that no longer say so (a cancelled job, a
-- lane holder claimed by its worker at once), which go with their slot. A job is given a row whenever it becomes available, by the
-- triggers below: no path into `available` can forget it.
CREATE TABLE ready (
    slot     smallint    NOT NULL,
    queue    text        NOT NULL,
    rate_key text        NOT NULL,
    priority smallint    NOT NULL,
    run_at   timestamptz NOT NULL,
    job_id   bigint      NOT NULL,
    -- the stage's task (NULL for a group or an await stage, which every worker runs)
    task     text
) PARTITION BY LIST (slot);
-- Autovacuum is off: rotation empties them, and a vacuum's lock would make rotation skip a slot.
CREATE TABLE ready_0 PARTITION OF ready FOR VALUES IN (0) WITH (autovacuum_enabled = false);
CREATE TABLE ready_1 PARTITION OF ready FOR VALUES IN (1) WITH (autovacuum_enabled = false);
CREATE TABLE ready_2 PARTITION OF ready FOR VALUES IN (2) WITH (autovacuum_enabled = false);
CREATE TABLE ready_3 PARTITION OF ready FOR VALUES IN (3) WITH (autovacuum_enabled = false);
-- The claim's order, per queue and rate limit key (as `jobs_available` was).
CREATE INDEX ready_order ON ready (queue, rate_key, priority, run_at, job_id);

-- What is available now.
INSERT INTO ready (slot, queue, rate_key, priority, run_at, job_id, task)
SELECT 0, j.queue, j.rate_key, j.priority, j.run_at, j.id, j.chain -> j.stage ->> 'task'
FROM jobs j WHERE j.state = 'available';

DROP INDEX jobs_available;

-- The triggers' functions are replaced by functions/ready_inserted.sql and ready_updated.sql at
-- every migrate (these bodies only let the triggers be made here, once).
CREATE FUNCTION ready_inserted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE FUNCTION ready_updated() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
-- New jobs: one insert per statement, from the statement's new rows.
CREATE TRIGGER jobs_ready_inserted AFTER INSERT ON jobs REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION ready_inserted();
-- A job that becomes available, or moves to another queue or key while it is: a row each. The
-- condition is checked without calling the function, so a claim or a completion costs nothing here.
CREATE TRIGGER jobs_ready_updated AFTER UPDATE ON jobs
    FOR EACH ROW WHEN (NEW.state = 'available'
                       AND (OLD.state <> 'available' OR OLD.queue <> NEW.queue OR OLD.rate_key <> NEW.rate_key))
    EXECUTE FUNCTION ready_updated();
