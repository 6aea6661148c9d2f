-- The counts of the overview, `GET /v1/queues` and `baton queues` are of the jobs their lists show
-- (issue 47: every count equals the list behind it). Lists leave group members out (their parent
-- shows them), so the index those counts and lists read leaves them out too: a count of a queue's
-- available or discarded jobs is an index-only scan of the same rows `GET /v1/jobs?state=` pages
-- through. Members' transitions no longer write entries to it either.
DROP INDEX jobs_state_id;
CREATE INDEX jobs_state_id ON jobs (state, id, queue) WHERE state <> 'completed' AND parent_id IS NULL;
