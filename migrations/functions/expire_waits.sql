-- Jobs whose wait for a signal has run out (up to `p_limit`, oldest first; `jobs_awaiting`): the
-- attempt fails ("no signal … within …", recorded like any failed attempt). While attempts remain
-- (`max_attempts`, default 1) the stage waits another `timeout_ms`; after the last the job is
-- discarded, counted in its queue's history. Returns each job whose wait ended, whether it was
-- discarded, whether someone awaits its end, and what the failure reporter tells: the queue, stage,
-- attempt, chain, metadata, error and when the next wait ends. A group member or map run discarded
-- here fails what waits for it, or is counted by a map that goes on (`fail_members`): the jobs
-- that finish then, and the queues of those made ready, are told by NOTIFY.
CREATE OR REPLACE FUNCTION expire_waits(p_limit int)
RETURNS TABLE (id bigint, discarded boolean, watched boolean, queue text, stage int, attempt int, chain text,
               metadata text, error text, next_at timestamptz)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
#variable_conflict use_column
DECLARE
    v_due bigint[];
    v_members bigint[];
    v_parents bigint[];
    v_lanes text[];
BEGIN
    SELECT array_agg(d.id) INTO v_due FROM (
        SELECT d.id FROM jobs d
        WHERE d.state = 'waiting' AND d.lane IS NULL AND d.pending IS NULL AND d.run_at <= now()
          AND d.chain -> d.stage ? 'await'
        ORDER BY d.run_at LIMIT p_limit FOR UPDATE SKIP LOCKED) d;
    RETURN QUERY
    WITH upd AS (
        UPDATE jobs j SET
            state = (CASE WHEN j.attempt >= coalesce((j.chain -> j.stage ->> 'max_attempts')::int, 1)
                          THEN 'discarded' ELSE 'waiting' END)::job_state,
            errors = j.errors || jsonb_build_array(jsonb_build_object(
                'stage', j.stage, 'attempt', j.attempt, 'at', now(), 'worker', NULL,
                'error', format('no signal "%s" within %s', j.chain -> j.stage ->> 'await',
                    coalesce((j.chain -> j.stage ->> 'timeout_ms')::bigint, 86400000) * interval '1 millisecond'))),
            attempt = CASE WHEN j.attempt >= coalesce((j.chain -> j.stage ->> 'max_attempts')::int, 1)
                           THEN j.attempt ELSE j.attempt + 1 END,
            run_at = now() + coalesce((j.chain -> j.stage ->> 'timeout_ms')::bigint, 86400000) * interval '1 millisecond',
            attempted_at = now(),
            finished_at = CASE WHEN j.attempt >= coalesce((j.chain -> j.stage ->> 'max_attempts')::int, 1)
                               THEN now() END
        -- By primary key from the ids locked, whatever their estimated number (see claim_for.sql).
        WHERE j.id = ANY (v_due)
        RETURNING j.id, j.state, j.queue, j.watched, j.stage, (j.errors -> -1 ->> 'attempt')::int AS attempt,
                  j.chain, j.metadata, j.errors -> -1 ->> 'error' AS error, j.run_at
    ), counted AS (
        INSERT INTO queue_minutes AS q (minute, queue, discarded)
        SELECT date_trunc('minute', now()), u.queue, count(*) FROM upd u WHERE u.state = 'discarded'
        GROUP BY u.queue ORDER BY u.queue
        ON CONFLICT (minute, queue) DO UPDATE SET discarded = q.discarded + excluded.discarded
    )
    SELECT u.id, u.state = 'discarded', u.watched, u.queue, u.stage, u.attempt, u.chain::text, u.metadata::text,
           u.error, u.run_at
    FROM upd u;

    SELECT array_agg(j.id), array_agg(DISTINCT j.parent_id) INTO v_members, v_parents FROM jobs j
    WHERE j.id = ANY (v_due) AND j.state = 'discarded' AND j.parent_id IS NOT NULL;
    IF v_members IS NOT NULL THEN
        -- (the rows are held already: no worker touches a job waiting for a signal, and the lanes
        -- are taken before any parent's row)
        v_lanes := ARRAY(SELECT map_lanes(v_parents));
        PERFORM lock_lanes(v_lanes);
        PERFORM pg_notify(current_schema() || '_events', CASE f.event WHEN 'wake' THEN 'q:' || f.queue ELSE 'f:' || f.id END)
        FROM (SELECT DISTINCT f.event, f.id, f.queue FROM fail_members(v_members, NULL) f) f;
        PERFORM pg_notify(current_schema() || '_events', 'q:' || q.queue)
        FROM (SELECT DISTINCT a.queue FROM promote_lanes(v_lanes) a) q;
    END IF;
END $$;
