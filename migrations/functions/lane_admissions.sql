-- For each lane, the waiting jobs it admits now: while fewer than its width hold it (available,
-- running or retryable), its oldest waiting jobs, each with the lowest slot free. Call with the
-- lanes locked. `first`: no other holder of its lane waits for a worker, and no job admitted
-- before it in this call either (else `apply_outcomes_for` looks for the older holders, to start
-- them first). Each lane costs a few index probes, whatever its backlog and its history: the
-- probe starts at the lane's floor (`lane_floors`, migration 18), past the entries the jobs
-- admitted before left in `jobs_lane_waiting`, and one admission in 16 moves the floor up to the
-- job it admits (as a separate upsert of every lane, it cost more;
-- docs/benchmarks.md#issue-20-a-floor-per-lane-built-and-measured-not-landed-2026-11-27-afternoon).
-- (Replaces `lane_heads`, which admitted one job per lane; dropped by migration 17.)
-- `ROWS 10`: a set-returning function is estimated at 1,000 rows unless told, and with that many
-- the hand-over in `apply_outcomes_for` was planned as hash joins over a sequential scan of `jobs`
-- (a cost that grew with the table, instead of ~100 index probes;
-- docs/benchmarks.md#the-hand-overs-plan). It returns one row per lane admitting, at most a batch's
-- worth.
CREATE OR REPLACE FUNCTION lane_admissions(p_lanes text[]) RETURNS TABLE (id bigint, slot smallint, first boolean)
LANGUAGE plpgsql ROWS 10 SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY
    WITH admitted AS MATERIALIZED (
        SELECT lanes.l AS lane, w.id, w.lane_ready_at, w.k, f.slot, h.available = 0 AND w.k = 1 AS first
        FROM (SELECT DISTINCT l FROM unnest(p_lanes) AS l WHERE l IS NOT NULL) lanes
        -- `lane_width`, written out: a call of a function with its own search_path cannot be
        -- inlined and cost more than the rest of the admission
        -- (docs/benchmarks.md#issue-20-wider-lanes-2026-11-26).
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
            SELECT x.id, x.lane_ready_at, row_number() OVER (ORDER BY x.lane_ready_at, x.id) AS k FROM jobs x
            WHERE x.lane = lanes.l AND x.state = 'waiting'
              AND (x.lane_ready_at, x.id) >= (SELECT coalesce(max(fl.ready_at), '-infinity'), coalesce(max(fl.id), 0)
                                              FROM lane_floors fl WHERE fl.lane = lanes.l)
            ORDER BY x.lane_ready_at, x.id LIMIT greatest(d.width - h.n, 0)) w
        -- The k-th free slot lies below n + k.
        CROSS JOIN LATERAL (
            SELECT s::smallint AS slot FROM generate_series(0, h.n + w.k - 1) s
            WHERE s <> ALL (h.taken) ORDER BY s OFFSET w.k - 1 LIMIT 1) f
    ), floors AS (
        -- Every job left waiting lies above a job admitted now. (`hashint8`: an id's low bits
        -- would pick the same lanes every time when lanes take jobs in turn. Of the id's counter,
        -- its low 12 bits, not of its time: which admissions move a floor does not depend on the
        -- clock.)
        INSERT INTO lane_floors AS fl (lane, ready_at, id)
        SELECT DISTINCT ON (a.lane) a.lane, a.lane_ready_at, a.id FROM admitted a
        WHERE hashint8(a.id & 4095) & 15 = 0
        ORDER BY a.lane, a.k DESC
        ON CONFLICT (lane) DO UPDATE SET ready_at = excluded.ready_at, id = excluded.id
    )
    SELECT a.id, a.slot, a.first FROM admitted a;
END $$;
