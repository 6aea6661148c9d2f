-- For each lane, the waiting jobs it admits now: while fewer than its width hold it (available,
-- running or retryable), its oldest waiting jobs, each with the lowest slot free. Call with the
-- lanes locked. `first`: no other holder of its lane waits for a worker, and no job admitted
-- before it in this call either (else `apply_outcomes_for` looks for the older holders, to start
-- them first). Each lane costs a few index probes, whatever its backlog.
-- (Replaces `lane_heads`, which admitted one job per lane; dropped by migration 17.)
-- `ROWS 10`: a set-returning function is estimated at 1,000 rows unless told, and with that many
-- the hand-over in `apply_outcomes_for` was planned as hash joins over a sequential scan of `jobs`
-- (80 ms a flush on a table of 30,000 jobs, instead of ~100 index probes; docs/benchmarks.md,
-- "The hand-over's plan"). It returns one row per lane admitting, at most a batch's worth.
CREATE OR REPLACE FUNCTION lane_admissions(p_lanes text[]) RETURNS TABLE (id bigint, slot smallint, first boolean)
LANGUAGE plpgsql ROWS 10 SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY
    SELECT w.id, f.slot, h.available = 0 AND w.k = 1
    FROM (SELECT DISTINCT l FROM unnest(p_lanes) AS l WHERE l IS NOT NULL) lanes
    -- `lane_width`, written out: a call of a function with its own search_path cannot be inlined
    -- and cost ~17 µs a lane, more than the rest of the admission (docs/benchmarks.md, "Wider lanes").
    CROSS JOIN LATERAL (
        SELECT coalesce(
            (SELECT s.width FROM lane_settings s WHERE s.lane = lanes.l),
            (SELECT s.width FROM lane_settings s
             WHERE right(s.lane, 1) = '*' AND starts_with(lanes.l, left(s.lane, -1))
             ORDER BY length(s.lane) DESC LIMIT 1),
            1) AS width) d
    CROSS JOIN LATERAL (
        SELECT count(*)::int AS n, count(*) FILTER (WHERE x.state = 'available')::int AS available,
               coalesce(array_agg(x.lane_slot), '{}') AS taken
        FROM jobs x WHERE x.lane = lanes.l AND x.state IN ('available', 'running', 'retryable')) h
    CROSS JOIN LATERAL (
        SELECT x.id, row_number() OVER (ORDER BY x.lane_ready_at, x.id) AS k FROM jobs x
        WHERE x.lane = lanes.l AND x.state = 'waiting'
        ORDER BY x.lane_ready_at, x.id LIMIT greatest(d.width - h.n, 0)) w
    -- The k-th free slot lies below n + k.
    CROSS JOIN LATERAL (
        SELECT s::smallint AS slot FROM generate_series(0, h.n + w.k - 1) s
        WHERE s <> ALL (h.taken) ORDER BY s OFFSET w.k - 1 LIMIT 1) f;
END $$;
