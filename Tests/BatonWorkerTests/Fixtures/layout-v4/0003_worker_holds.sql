-- Baton schema, version 3: each worker's heartbeat lists the jobs it holds.
--
-- A claim (also a lane hand-off claimed inside apply_outcomes, or a hop) can commit while its
-- answer is lost with the connection that carried it. The job is then running under a live worker
-- that does not know it has it, and that worker's heartbeats kept it running for ever, its lane
-- blocked behind it. Now every heartbeat writes the ids the worker holds (running, or waiting for
-- their outcome to be written), and maintenance puts back a job running under a live worker that
-- was claimed more than a lease before the worker's last heartbeat and is not in its list
-- (Store.orphanedStages): the worker never ran it, so its attempt is not counted.
ALTER TABLE workers ADD COLUMN holds bigint[] NOT NULL DEFAULT '{}';
