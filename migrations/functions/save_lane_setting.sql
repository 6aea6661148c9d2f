-- Set the width of a lane, or of every lane a prefix (`customer-*`) starts, owned by `p_source`
-- (`api` or `settings`); a NULL width deletes the setting. Takes effect at once: the lanes it
-- touches that have jobs waiting are locked and admit what they now have room for (a narrower
-- lane admits nothing until fewer than its width hold it; its holders run on). Returns the queues
-- of the jobs admitted, to be woken.
CREATE OR REPLACE FUNCTION save_lane_setting(p_lane text, p_width int, p_source text) RETURNS TABLE (queue text)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
DECLARE
    v_lanes text[];
BEGIN
    IF p_width IS NULL THEN
        DELETE FROM lane_settings s WHERE s.lane = p_lane;
    ELSE
        INSERT INTO lane_settings AS s (lane, width, source) VALUES (p_lane, p_width, p_source)
        ON CONFLICT (lane) DO UPDATE SET width = excluded.width, source = excluded.source, updated_at = now();
    END IF;
    IF right(p_lane, 1) = '*' THEN
        SELECT array_agg(DISTINCT j.lane) INTO v_lanes FROM jobs j
        WHERE j.state = 'waiting' AND j.lane IS NOT NULL AND starts_with(j.lane, left(p_lane, -1));
    ELSE
        v_lanes := ARRAY[p_lane];
    END IF;
    IF v_lanes IS NOT NULL THEN
        PERFORM lock_lanes(v_lanes);
        RETURN QUERY SELECT DISTINCT p.queue FROM promote_lanes(v_lanes) p;
    END IF;
END $$;
