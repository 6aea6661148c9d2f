-- Baton schema, version 18: where a deep lane's waiting jobs begin.
--
-- A lane admits its oldest waiting jobs through `jobs_lane_waiting`, from the start of the lane's
-- range. Every job admitted since the last vacuum left a dead entry there, at the front of that
-- range: with a million jobs queued in 100 lanes a probe read 16–17 index pages instead of 4, and
-- an admission cost more than twice what it did with a hundred thousand (docs/benchmarks.md, "Issue
-- 20: a floor per lane"). A lane's floor is a position (`lane_ready_at`, `id`) no job waiting in
-- it lies below: the admission probes from there, past the dead entries.
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
