-- A map's elements beyond its `concurrency` (issue 48): written by the fan-out, a row each, and
-- made member jobs in element order as the runs before them complete (`map_runs_start`), so that
-- at most `concurrency` of a map's runs are unfinished at once. Deleted as they start, and with
-- their job. A map without a bound writes nothing here: its runs all start at once.
CREATE TABLE map_elements (
    parent_id bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    stage     int    NOT NULL,
    index     int    NOT NULL,
    value     jsonb  NOT NULL,
    PRIMARY KEY (parent_id, stage, index)
);
