-- For each lane, the waiting jobs it admits now: while fewer than its width hold it (available,
-- running or retryable: found through `lane_holds`), its oldest waiting jobs, each with the lowest
-- slot free. Call with the lanes locked: that, and this function alone handing slots out, keeps a
-- lane to its width and a slot to one holder. `first`: no other holder of its lane waits for a
-- worker, and no job admitted
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
-- `enable_seqscan = off`: `lane_holds`' partitions are never analysed (rotation empties them), and
-- a lane's holders are a few index entries among every other lane's. `enable_bitmapscan = off`: a
-- bitmap scan cannot mark the dead entries it meets, so every admission visited all of them.
-- `enable_sort = off`: a lane's waiting jobs come from `jobs_lane_waiting` in their order; when
-- the statistics said few jobs wait, the plan took them from `jobs_state_id`'s `waiting` range and
-- sorted them, which steps over the entry of every job that ever waited in any lane since vacuum
-- last ran (`CachedPlanTests`; docs/benchmarks.md#issue-46-lanes-through-a-held-horizon-2026-12-06).
-- The sorts left are those no plan avoids.
CREATE OR REPLACE FUNCTION lane_admissions(p_lanes text[]) RETURNS TABLE (id bigint, slot smallint, first boolean)
LANGUAGE plpgsql ROWS 10 SET search_path FROM CURRENT SET enable_seqscan = off SET enable_bitmapscan = off
    SET enable_sort = off AS $$
BEGIN
    -- The holders are read as they are once the lanes' locks are granted, which a snapshot taken
    -- before (a caller's REPEATABLE READ transaction) cannot see: it could admit past the width.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'a job enters its lane only in a READ COMMITTED transaction (this one is %)',
            upper(current_setting('transaction_isolation')) USING ERRCODE = 'feature_not_supported';
    END IF;
    RETURN QUERY
    WITH lanes AS MATERIALIZED (
        SELECT DISTINCT l FROM unnest(p_lanes) AS l WHERE l IS NOT NULL
    ), held AS MATERIALIZED (
        -- The lanes' rows in `lane_holds` (migration 21), each with its job if it still holds that
        -- lane and slot: the rows of holders that stopped holding are hints gone stale, deleted
        -- below, so that a lane has at most those of the holders it had since its last admission.
        -- `state`: the job's, if it holds that lane and slot, else NULL. Each job is looked up by
        -- its key in a subquery, which no plan turns into a join: joined, the plan hashed a scan of
        -- `jobs_state_id`'s holding states, every job's old entries included, or scanned the
        -- primary key whole (see claim_for.sql).
        SELECT lanes.l AS lane, o.tableoid AS part, o.ctid AS place, o.job_id, o.lane_slot,
               (SELECT x.state FROM jobs x
                WHERE x.id = o.job_id
                  AND (x.lane = lanes.l AND x.lane_slot = o.lane_slot
                       AND x.state IN ('available', 'running', 'retryable')) IS TRUE) AS state
        FROM lanes JOIN lane_holds o ON o.lane = lanes.l
    ), stale AS (
        -- each row where the scan found it (see claim_for.sql)
        DELETE FROM lane_holds r USING held s WHERE s.state IS NULL AND r.tableoid = s.part AND r.ctid = s.place
    ), admitted AS MATERIALIZED (
        SELECT lanes.l AS lane, w.id, w.lane_ready_at, w.k, f.slot, h.available = 0 AND w.k = 1 AS first
        FROM lanes
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
            SELECT count(DISTINCT x.job_id) FILTER (WHERE x.state IS NOT NULL)::int AS n,
                   count(DISTINCT x.job_id) FILTER (WHERE x.state = 'available')::int AS available,
                   coalesce(array_agg(x.lane_slot) FILTER (WHERE x.state IS NOT NULL), '{}') AS taken
            FROM held x WHERE x.lane = lanes.l) h
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
