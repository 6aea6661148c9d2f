-- Scheduled and retryable jobs due since `p_from` (NULL: whenever) become available, `p_limit` at
-- most; a due scheduled job whose stage names a lane joins that lane's queue (in order of its due
-- time). Returns one row: the queues woken, how many jobs were promoted (call again while that is
-- `p_limit`), and the seconds until the next job is due (NULL: none is), for the scheduler to
-- wake then rather than at its next poll.
--
-- Why a start (issue 46): `jobs_due` keeps an entry for every job it ever held until vacuum
-- removes it, and a held xmin horizon stops vacuum. A scan from the index's start steps over the
-- entry of every job promoted since the hold began (hundreds of thousands in half an hour, a heap
-- visit each); a scan from a few seconds back steps over those few seconds' worth. A job whose
-- enqueue or retry commits after the scan's start has passed its due time (a caller's own long
-- transaction) is promoted by the scheduler's sweep from the start (NULL), every 10 s.
CREATE OR REPLACE FUNCTION promote_due_from(
    p_limit int, p_from timestamptz, OUT queues text[], OUT promoted int, OUT next_due_in float8
)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
DECLARE
    v_lanes text[];
    v_lanes_all text[];
    v_ready_at timestamptz[];
    v_ids bigint[];
BEGIN
    WITH due AS (
        SELECT d.id FROM jobs d
        WHERE d.state IN ('scheduled', 'retryable') AND d.run_at <= now()
          AND d.run_at >= coalesce(p_from, '-infinity')
        ORDER BY d.run_at LIMIT p_limit FOR UPDATE SKIP LOCKED
    ), upd AS (
        UPDATE jobs j SET
            state = (CASE WHEN j.state = 'scheduled' AND j.lane IS NOT NULL THEN 'waiting'
                          ELSE 'available' END)::job_state,
            lane_ready_at = CASE WHEN j.state = 'scheduled' THEN j.run_at ELSE j.lane_ready_at END
        -- By primary key from the ids locked, whatever their estimated number (see claim_for.sql).
        WHERE j.id = ANY (ARRAY(SELECT due.id FROM due))
        RETURNING j.id, j.queue, j.state, j.lane, j.lane_ready_at
    )
    SELECT array_agg(DISTINCT upd.queue) FILTER (WHERE upd.state = 'available'),
           array_agg(upd.lane) FILTER (WHERE upd.state = 'waiting'),
           array_agg(upd.lane_ready_at) FILTER (WHERE upd.state = 'waiting'),
           array_agg(upd.id) FILTER (WHERE upd.state = 'waiting'), count(*)
    INTO queues, v_lanes_all, v_ready_at, v_ids, promoted FROM upd;
    IF v_lanes_all IS NOT NULL THEN
        v_lanes := ARRAY(SELECT DISTINCT l FROM unnest(v_lanes_all) AS l);
        PERFORM lock_lanes(v_lanes);
        -- Entered at their due time, perhaps below where their lanes' floors stand: each floor
        -- comes down to the lowest of them. (Deleted instead, as `promote_due` does, the next
        -- admission probed the lane whole, past the entry of every job that waited in it since a
        -- held horizon began: a lane taking delayed jobs lost its floor every second.)
        UPDATE lane_floors f SET ready_at = w.ready_at, id = w.id
        FROM (SELECT DISTINCT ON (x.lane) x.lane, x.ready_at, x.id
              FROM unnest(v_lanes_all, v_ready_at, v_ids) AS x(lane, ready_at, id)
              ORDER BY x.lane, x.ready_at, x.id) w
        WHERE f.lane = w.lane AND (w.ready_at, w.id) < (f.ready_at, f.id);
        queues := queues || ARRAY(SELECT p.queue FROM promote_lanes(v_lanes) p);
    END IF;
    queues := ARRAY(SELECT DISTINCT q FROM unnest(queues) AS q);
    -- From now on up: the entries of the jobs promoted lie below.
    SELECT greatest(0, extract(epoch FROM min(d.run_at) - clock_timestamp()))::float8 INTO next_due_in
    FROM jobs d WHERE d.state IN ('scheduled', 'retryable') AND d.run_at > now();
END $$;
