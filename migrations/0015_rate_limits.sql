-- Baton schema, version 15: rate limits.
--
-- A task stage may name a rate limit key (`"rate": "partner-api"`); `rate_key` is the current
-- stage's ('' for none), set whenever the stage changes. A stage counts against its key when a
-- worker claims it (`claim_for`), which takes one of the key's tokens: a bucket of `burst` tokens
-- refilled at `rate` per `per_ms`, read and written under the row's lock, so the bound holds across
-- every worker. A stage waiting for a token stays `available` and costs nothing while it waits:
-- `jobs_available` is keyed by (queue, rate_key, …), so claims of unlimited stages never walk over
-- limited ones, and each key's stages are claimed from their own range of the index.
ALTER TABLE jobs ADD COLUMN rate_key text NOT NULL DEFAULT '';
DROP INDEX jobs_available;
CREATE INDEX jobs_available ON jobs (queue, rate_key, priority, run_at, id) WHERE state = 'available';

CREATE TABLE rate_limits (
    key         text PRIMARY KEY,
    rate        int NOT NULL CHECK (rate BETWEEN 1 AND 1000000),
    per_ms      bigint NOT NULL CHECK (per_ms BETWEEN 1 AND 2678400000),
    burst       int NOT NULL CHECK (burst BETWEEN 1 AND 1000000),
    tokens      float8 NOT NULL,
    refilled_at timestamptz NOT NULL DEFAULT now(),
    source      text NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'settings', 'prefix')),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
-- A key ending in `*` is a prefix: every key it starts that has no limit of its own gets a bucket
-- of its own with the prefix's rate (`customer-*`: each customer its own 10 a second), made by the
-- first claim that needs it (`source` 'prefix'; the longest prefix wins).
CREATE INDEX rate_limits_prefixes ON rate_limits (key) WHERE right(key, 1) = '*';

