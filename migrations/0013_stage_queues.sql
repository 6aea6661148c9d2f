-- Baton schema, version 13: stages routed to their own queues.
--
-- A task stage may name a queue of its own (a pool of GPU workers, a host with a licence): while
-- it is the current stage, `queue` is that queue, so that only workers serving it claim the job,
-- and `home_queue` keeps the job's own queue, where the stages without one run. NULL while no
-- stage has left the job's queue (every job of a chain without stage queues).
ALTER TABLE jobs ADD COLUMN home_queue text;
