-- Baton schema, version 12: unique jobs.
--
-- A job enqueued with a uniqueness rule carries `unique_key` (its queue, your key or its first
-- task and args, and its time window, computed by the enqueuer) and `unique_states`, the states
-- in which it holds the key: always every unfinished state, and the final states the rule names.
-- The partial unique index admits one holder per key; `enqueue` answers the holder instead of
-- inserting another. Moving between unfinished states never changes whether a job holds its key,
-- so only a retry (from a final state outside the rule) can meet a holder: `retry_job` skips it.
-- The check is NOT VALID: the rows already there have no key, and validating them would scan the
-- table under the migration's lock; every row written from now on is checked.
ALTER TABLE jobs ADD COLUMN unique_key text, ADD COLUMN unique_states job_state[],
    ADD CONSTRAINT unique_states_hold_while_unfinished CHECK (
        unique_key IS NULL OR unique_states @> '{scheduled,available,running,retryable,waiting}') NOT VALID;

CREATE UNIQUE INDEX jobs_unique ON jobs (unique_key) WHERE unique_key IS NOT NULL AND state = ANY (unique_states);
