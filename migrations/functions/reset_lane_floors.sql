-- Superseded by `review_lane_floors` (issue 46): kept, unchanged, for the workers of version 20
-- that still call it during an upgrade; a numbered file drops it once no release does.
-- Deletes up to `p_limit` lanes' floors (`lane_floors`, migration 18) and lets those lanes admit
-- what they have room for, as the maintenance leader does each minute: a job that entered a lane
-- below its floor (the database's clock stepped back) is admitted now, and the floors of lanes no
-- longer used go. A lane without a floor probes from the start of its range until one admission in
-- 16 writes one again. Wakes the queues of the jobs admitted. Returns how many floors it deleted
-- (call again while that is `p_limit`). In batches: each lane takes an advisory lock until commit.
CREATE OR REPLACE FUNCTION reset_lane_floors(p_limit int) RETURNS int
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
DECLARE
    v_lanes text[];
BEGIN
    SELECT array_agg(f.lane) INTO v_lanes FROM (SELECT f.lane FROM lane_floors f ORDER BY f.lane LIMIT p_limit) f;
    IF v_lanes IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM lock_lanes(v_lanes);
    DELETE FROM lane_floors f WHERE f.lane = ANY (v_lanes);
    PERFORM pg_notify(current_schema() || '_events', 'q:' || q)
    FROM (SELECT DISTINCT p.queue AS q FROM promote_lanes(v_lanes) p) x;
    RETURN cardinality(v_lanes);
END $$;
