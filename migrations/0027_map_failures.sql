-- A map's failure policy, and a retry of only its failed runs (issue 48).
-- `failed`: on a job waiting for a map with `"failures": "continue"`, how many of its runs failed
-- for good so far (NULL: none, or another stage), so that `stop_after` is checked in O(1) per
-- failure, not by a count over the runs. NULL for every row already there: nothing is rewritten.
ALTER TABLE jobs ADD COLUMN failed int;
-- A row of `map_elements` with a `job_id` is a failed run that a retry starts again (at the stage
-- it stopped on) when the map's bound leaves it room, not an element to start as a new run; its
-- `value` is NULL (the run's job holds its input). Such rows are found through their own index,
-- whatever the element index the map's new runs have reached.
ALTER TABLE map_elements ADD COLUMN job_id bigint;
ALTER TABLE map_elements ALTER COLUMN value DROP NOT NULL;
CREATE INDEX map_elements_restarts ON map_elements (parent_id, stage, index) WHERE job_id IS NOT NULL;
-- Replaced by `fail_members` (which also goes on under `"failures": "continue"`) and
-- `map_runs_next` (which also starts failed runs again); only the schema's functions called them
-- (a new schema has neither: the functions are made after the numbered files).
DROP FUNCTION IF EXISTS fail_parents(bigint[], text);
DROP FUNCTION IF EXISTS map_runs_start(bigint, int, int);
