-- The rate limits' buckets are written to a table of their own, emptied by truncation, not by
-- vacuum (issue 46; docs/storage.md#rate-limits-the-buckets-own-table-version-22).
--
-- Until version 21 a claim of a stage with a rate limit key updated its key's row of
-- `rate_limits` twice (refilled, then spent). Every update leaves a dead version of that one row,
-- which only vacuum removes; while something holds the cluster's xmin horizon, vacuum cannot, and
-- every later claim of the key stepped over all of them under the row's lock: with 800 jobs/s
-- through one key, claims took milliseconds after ten minutes of a hold and the worker fell behind
-- after 24 (docs/benchmarks.md#issue-46-rate-limits-through-a-held-horizon-2026-12-07).
--
-- `rate_tokens` holds each key's tokens and when they were counted, one row per key, in four
-- partitions by `slot` as `ready`'s are. A claim reads and writes the row where it is (one write
-- per key and claim that took something); each second the maintenance leader moves the rows of the
-- slots no longer written to into the current slot and truncates those (`rotate_rate_tokens`), so a
-- key's dead versions are those of the last few seconds.
--
-- Claims of a key take its advisory lock (`lock_rate_keys`), as they took its row's lock before;
-- they also hold a shared lock that rotation takes exclusively, so that no claim reads a slot in the
-- middle of its move (a statement that waited on a truncated slot would not see the row moved).
-- `rate_limits` keeps each limit's settings; its `tokens` and `refilled_at` are where a bucket
-- starts when it has no row here (a new limit, or one just changed).
CREATE TABLE rate_tokens (
    slot        smallint    NOT NULL,
    key         text        NOT NULL,
    tokens      float8      NOT NULL,
    refilled_at timestamptz NOT NULL
) PARTITION BY LIST (slot);
-- Autovacuum is off: rotation empties them, and a vacuum's lock would make rotation skip a slot.
CREATE TABLE rate_tokens_0 PARTITION OF rate_tokens FOR VALUES IN (0) WITH (autovacuum_enabled = false);
CREATE TABLE rate_tokens_1 PARTITION OF rate_tokens FOR VALUES IN (1) WITH (autovacuum_enabled = false);
CREATE TABLE rate_tokens_2 PARTITION OF rate_tokens FOR VALUES IN (2) WITH (autovacuum_enabled = false);
CREATE TABLE rate_tokens_3 PARTITION OF rate_tokens FOR VALUES IN (3) WITH (autovacuum_enabled = false);
CREATE INDEX rate_tokens_key ON rate_tokens (key);

-- The buckets as they stand.
INSERT INTO rate_tokens (slot, key, tokens, refilled_at)
SELECT 0, r.key, r.tokens, r.refilled_at FROM rate_limits r WHERE right(r.key, 1) <> '*';
