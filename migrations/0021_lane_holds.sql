-- A lane's holders are found through a table of their own, emptied by truncation, not by vacuum
-- (issue 46, second slice; docs/storage.md has the reason and the figures).
--
-- Until version 20 every admission counted a lane's holders through `jobs_lane_head`, a unique
-- partial index of `jobs` on `(lane, lane_slot)`. Each holder a lane ever had left an entry under
-- the lane's key, dead once it finished, which only vacuum removes; while something holds the
-- cluster's xmin horizon, vacuum cannot, and every admission and every uniqueness check of a
-- hand-over stepped over all the lane's holders since the horizon stopped: 100 lanes at 800 jobs/s
-- fell to 75 % of that with a pickup of 18 s after two and a half minutes
-- (docs/benchmarks.md#issue-46-lanes-through-a-held-horizon-2026-12-06).
--
-- `lane_holds` has a row for each job that started holding a lane (its current stage in the lane
-- and `available`, `running` or `retryable`): its lane, its slot and its id, written by the two
-- statements that admit (`promote_lanes`, and the hand-over in `apply_outcomes_for`), both of
-- `lane_admissions`' slots. A row is a hint, `jobs` the truth: a holder is a row whose job still
-- holds that lane and slot. A job that stops holding keeps its row until its lane's next admission
-- deletes it (`lane_admissions`), so releasing a lane writes nothing here.
-- Rows go to the slot of the second they are written in (`ready_slot()`, as `ready`'s do), and
-- each second the maintenance leader moves the rows of the slots no longer written to whose jobs
-- still hold (holders that have held two seconds or more) into `lane_holds_long`, and truncates
-- those slots (`rotate_lane_holds`): a lane's dead rows are those of the last few seconds, plus
-- those of holders that held long, which are few and vacuumed as usual.
--
-- That a lane has at most `width` holders, one per slot, is kept by the one function that hands
-- slots out (`lane_admissions`), which every path into a lane calls under the lane's advisory lock.
-- The unique index also refused a second holder written by any other statement; no index of
-- `lane_holds` can (its stale rows share their keys with holders), and a trigger that checked
-- cost a laned job more than a third of its speed
-- (docs/benchmarks.md#issue-46-lanes-through-a-held-horizon-2026-12-06).
CREATE TABLE lane_holds (
    part      smallint NOT NULL,
    lane      text     NOT NULL,
    lane_slot smallint NOT NULL,
    job_id    bigint   NOT NULL
) PARTITION BY LIST (part);
-- Autovacuum is off where rotation truncates: a vacuum's lock would make rotation skip a slot.
CREATE TABLE lane_holds_0 PARTITION OF lane_holds FOR VALUES IN (0) WITH (autovacuum_enabled = false);
CREATE TABLE lane_holds_1 PARTITION OF lane_holds FOR VALUES IN (1) WITH (autovacuum_enabled = false);
CREATE TABLE lane_holds_2 PARTITION OF lane_holds FOR VALUES IN (2) WITH (autovacuum_enabled = false);
CREATE TABLE lane_holds_3 PARTITION OF lane_holds FOR VALUES IN (3) WITH (autovacuum_enabled = false);
-- Holders that outlived a rotation.
CREATE TABLE lane_holds_long PARTITION OF lane_holds FOR VALUES IN (4);
-- A lane's rows, by slot.
CREATE INDEX lane_holds_lane ON lane_holds (lane, lane_slot);

-- Who holds now.
INSERT INTO lane_holds (part, lane, lane_slot, job_id)
SELECT 4, j.lane, j.lane_slot, j.id FROM jobs j
WHERE j.lane IS NOT NULL AND j.state IN ('available', 'running', 'retryable');

DROP INDEX jobs_lane_head;
