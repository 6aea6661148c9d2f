-- Jobs whose wait for a signal has run out (up to `p_limit`, oldest first; `jobs_awaiting`): the
-- attempt fails ("no signal … within …", recorded like any failed attempt). While attempts remain
-- (`max_attempts`, default 1) the stage waits another `timeout_ms`; after the last the job is
-- discarded, counted in its queue's history. Returns each job whose wait ended, whether it was
-- discarded, whether someone awaits its end, and what the failure reporter tells: the queue, stage,
-- attempt, chain, metadata, error and when the next wait ends.
CREATE OR REPLACE FUNCTION expire_waits(p_limit int)
RETURNS TABLE (id bigint, discarded boolean, watched boolean, queue text, stage int, attempt int, chain text,
               metadata text, error text, next_at timestamptz)
LANGUAGE plpgsql SET search_path FROM CURRENT SET jit = off AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH due AS (
        SELECT d.id FROM jobs d
        WHERE d.state = 'waiting' AND d.lane IS NULL AND d.pending IS NULL AND d.run_at <= now()
          AND d.chain -> d.stage ? 'await'
        ORDER BY d.run_at LIMIT p_limit FOR UPDATE SKIP LOCKED
    ), upd AS (
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
        WHERE j.id = ANY (ARRAY(SELECT due.id FROM due))
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
END $$;
