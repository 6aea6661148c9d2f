-- Chain features (issue 48): what a stored chain uses that a worker of an earlier version cannot
-- read, and what each worker reads. A job's `features` (NULL: none) are written by the enqueue
-- from what the caller says its chain uses (`"features"` in the batch; the Swift store says it
-- for every chain it writes) and inherited by its group members; a worker's are written when it
-- registers (NULL: a worker of an earlier version, which reads none). A worker is given a job,
-- by a claim or a lane's hand-over, only if it reads every feature of its chain, so that a chain
-- a worker cannot read waits for one that can (`waiting_for: no-worker-for-feature`) instead of
-- being discarded as unreadable during a rolling upgrade. Both columns are NULL for every row
-- already there: adding them rewrites nothing.
ALTER TABLE jobs ADD COLUMN features text[];
ALTER TABLE workers ADD COLUMN features text[];
