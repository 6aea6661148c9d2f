-- Baton schema, version 4: a claim also says how long each stage waited to be picked up.
--
-- `run_at` is when a stage became claimable in every path (enqueue, advance, retry due time,
-- release, lane promotion), so now() - run_at at the claim is its pickup latency, which workers
-- report as the `baton_pickup_latency_seconds` histogram. A new function rather than a changed
-- `claim`: workers of the previous version keep calling `claim` during a rolling upgrade.
CREATE FUNCTION claim_waited(p_queue text, p_limit int, p_worker text)
RETURNS TABLE (id bigint, stage int, attempt int, chain text, input text, results text, metadata text,
               group_output text, waited float8)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
#variable_conflict use_column
BEGIN
    IF EXISTS (SELECT 1 FROM paused_queues q WHERE q.queue = p_queue) THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH next AS (
        SELECT n.id FROM jobs n
        WHERE n.state = 'available' AND n.queue = p_queue AND n.run_at <= now()
        ORDER BY n.priority, n.run_at, n.id
        LIMIT p_limit FOR UPDATE SKIP LOCKED
    )
    UPDATE jobs j
    SET state = 'running', attempt = j.attempt + 1, worker_id = p_worker, attempted_at = now()
    FROM next WHERE j.id = next.id
    RETURNING j.id, j.stage, j.attempt, j.chain::text,
        (CASE WHEN j.stage = 0 THEN j.input ELSE j.results -> (j.stage - 1) -> 'output' END)::text,
        CASE WHEN j.stage = 0 THEN NULL ELSE j.results::text END,
        j.metadata::text, j.group_output::text, extract(epoch FROM now() - j.run_at)::float8;
END $$;
