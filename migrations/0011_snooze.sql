-- Baton schema, version 11: snoozed stages.
--
-- A task may snooze: its stage runs again later without spending an attempt (StageContext's
-- `Snooze`, like Oban's snooze), unlike a retry, which records a failed attempt. A snoozed job is
-- `retryable` (so a laned stage keeps its lane) with `snoozed` set, which says why it waits;
-- apply_outcomes sets it with every outcome it applies.
ALTER TABLE jobs ADD COLUMN snoozed boolean NOT NULL DEFAULT false;
