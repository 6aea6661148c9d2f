-- Baton schema, version 17: rate limits on a whole queue or lane.
--
-- A limit whose key is `queue:<name>` or `lane:<name>` (or a prefix of either, `lane:customer-*`)
-- binds every task stage of that queue or lane that names no key of its own: such a stage's
-- `rate_key` is resolved to it when the stage becomes current (`stage_rate_key`). Every flush and
-- enqueue first asks whether any such limit exists at all, through this index, so that a
-- database without them pays one empty index probe per statement, not a look-up per stage.
CREATE INDEX rate_limits_scoped ON rate_limits (key)
    WHERE starts_with(key, 'queue:') OR starts_with(key, 'lane:');
