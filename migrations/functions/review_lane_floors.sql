-- The maintenance leader's look at the lanes' floors (`lane_floors`, migration 18) each minute, up
-- to `p_limit` lanes after `p_after` in name order. A lane with a job waiting below its floor (the
-- database's clock stepped back as it entered) loses its floor and admits what it has room for, so
-- that such a job is at most a minute late, never lost; the floor of a lane that moved it for none
-- of its admissions in an hour goes, which keeps the table to the lanes in use. Every other floor
-- stays: a lane without one probes from the start of its range, past the entry every job it
-- admitted left there, which a held xmin horizon keeps, so deleting every floor each minute sent
-- each busy lane's next admissions over all of them, under its lock. Looking below a floor steps
-- over those entries too, but holds no lock while it does. Returns the last lane looked at
-- (NULL: there was none) and how many floors went. (Replaces `reset_lane_floors`, which deleted
-- every floor, kept for the workers of version 20 until a numbered file drops it.)
CREATE OR REPLACE FUNCTION review_lane_floors(p_after text, p_limit int) RETURNS TABLE (last text, deleted int)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
DECLARE
    v_last text;
    v_below text[];
    v_stale text[];
    v_deleted int := 0;
    v_count int;
BEGIN
    SELECT max(f.lane),
           array_agg(f.lane) FILTER (WHERE EXISTS (
               SELECT 1 FROM jobs x WHERE x.lane = f.lane AND x.state = 'waiting'
                 AND (x.lane_ready_at, x.id) < (f.ready_at, f.id))),
           array_agg(f.lane) FILTER (WHERE f.ready_at < now() - interval '1 hour')
    INTO v_last, v_below, v_stale
    FROM (SELECT * FROM lane_floors f WHERE p_after IS NULL OR f.lane > p_after ORDER BY f.lane LIMIT p_limit) f;
    IF v_below IS NOT NULL THEN
        PERFORM lock_lanes(v_below);
        DELETE FROM lane_floors f WHERE f.lane = ANY (v_below);
        GET DIAGNOSTICS v_deleted = ROW_COUNT;
        PERFORM pg_notify(current_schema() || '_events', 'q:' || q)
        FROM (SELECT DISTINCT p.queue AS q FROM promote_lanes(v_below) p) x;
    END IF;
    IF v_stale IS NOT NULL THEN
        -- Without the lanes' locks: a floor is only where probes start, and one an admission
        -- moves meanwhile is newer than an hour when this checks the row again.
        DELETE FROM lane_floors f WHERE f.lane = ANY (v_stale) AND f.ready_at < now() - interval '1 hour';
        GET DIAGNOSTICS v_count = ROW_COUNT;
        v_deleted := v_deleted + v_count;
    END IF;
    RETURN QUERY SELECT v_last, v_deleted;
END $$;
