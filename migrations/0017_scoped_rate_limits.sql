-- Baton schema, version 17: rate limits on a whole queue or lane.
--
-- A limit whose key is `queue:<name>` or `lane:<name>` (or a prefix of either, `lane:customer-*`)
-- binds every task stage of that queue or lane that names no key of its own: such a stage's
-- `rate_key` is resolved to it when the stage becomes current (`stage_rate_key`). Every flush and
-- enqueue first asks whether any such limit exists at all, through this index, so that a
-- database without them pays one empty index probe per statement, not a look-up per stage.
CREATE INDEX rate_limits_scoped ON rate_limits (key)
    WHERE starts_with(key, 'queue:') OR starts_with(key, 'lane:');

-- `lane_heads`, replaced by `lane_admissions` in version 14, called by no function since. It was
-- kept then because the functions were replaced after the numbered files, in transactions of
-- their own; a migration is now one transaction, files and functions together.
DROP FUNCTION IF EXISTS lane_heads(text[]);
