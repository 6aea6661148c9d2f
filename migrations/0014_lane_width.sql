-- Baton schema, version 14: lanes wider than one.
--
-- A lane admits at most `width` of its stages at once (default 1: strictly ordered). The database
-- keeps the promise the way it kept width 1: each holder (available, running or retryable) takes
-- one of its lane's slots 0…width−1, and a unique index on (lane, slot) over those states refuses a
-- second holder of a slot. Slots are handed out under the lane's advisory lock (`lane_admissions`), the
-- lowest free first, and only while fewer than `width` hold the lane: a narrowed lane lets its
-- holders finish and admits again once fewer hold it than its new width. Every job that held a lane
-- before this migration holds slot 0, as every holder then did.
ALTER TABLE jobs ADD COLUMN lane_slot smallint NOT NULL DEFAULT 0;
DROP INDEX jobs_lane_head;
CREATE UNIQUE INDEX jobs_lane_head ON jobs (lane, lane_slot)
    WHERE lane IS NOT NULL AND state IN ('available', 'running', 'retryable');

-- What operators set per lane. `lane` is a lane's name, or a prefix ending in `*` that sets every
-- lane it starts (`customer-*`); a lane's own entry wins, then the longest prefix. No entry: width 1.
-- `source`: `api` (set through the API, CLI or dashboard) or `settings` (a settings file's `lanes:`,
-- replaced whenever a process with that file starts).
CREATE TABLE lane_settings (
    lane        text PRIMARY KEY,
    width       int NOT NULL CHECK (width BETWEEN 1 AND 10000),
    source      text NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'settings')),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
-- The prefixes, read at each hand-over of a lane without its own entry: few rows, one index.
CREATE INDEX lane_settings_prefixes ON lane_settings (lane) WHERE right(lane, 1) = '*';
