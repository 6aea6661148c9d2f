-- Claim up to `p_limit` available jobs of a queue for a worker, in priority, due time and id order,
-- skipping rows other workers hold; nothing from a paused queue (one primary-key probe). A plain
-- scan of the `jobs_available` partial index: lanes cost nothing here (a job waiting for its lane
-- is not available). A function so that its plan is cached per connection: planning this
-- statement costs more than running it on an idle queue. `waited`: seconds since the stage became
-- claimable (`run_at` is that instant in every path), the worker's pickup latency.
-- `p_tasks`: the tasks the worker runs; a task stage of another task is left for a worker that
-- runs it (group and await stages are every worker's). NULL: any.
CREATE OR REPLACE FUNCTION claim_runnable(p_queue text, p_limit int, p_worker text, p_tasks text[])
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
          AND (p_tasks IS NULL OR NOT (n.chain -> n.stage ? 'task') OR n.chain -> n.stage ->> 'task' = ANY (p_tasks))
        ORDER BY n.priority, n.run_at, n.id
        LIMIT p_limit FOR UPDATE SKIP LOCKED
    )
    UPDATE jobs j
    SET state = 'running', attempt = j.attempt + 1, worker_id = p_worker, attempted_at = now()
    FROM next WHERE j.id = next.id
    RETURNING j.id, j.stage, j.attempt, j.chain::text,
        (CASE WHEN jsonb_array_length(j.results) = 0 THEN j.input ELSE j.results -> -1 -> 'output' END)::text,
        CASE WHEN jsonb_array_length(j.results) = 0 THEN NULL ELSE j.results::text END,
        j.metadata::text, j.group_output::text, extract(epoch FROM now() - j.run_at)::float8;
END $$;
