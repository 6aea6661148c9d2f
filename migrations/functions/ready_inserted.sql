-- Rows of `ready` (migration 20) are written by triggers on `jobs` whenever a job becomes
-- available, so that no path into `available` forgets the row the claim looks for (claim_for.sql).
-- New jobs that are available: one insert for the statement's rows, into one slot (trigger
-- `jobs_ready_inserted`). In a fair queue (migration 28) each key's new stages take turns after
-- its last (`fair_turn`, once per key, rate key and priority of the statement, then in job order
-- each a millisecond of turns after the one before, divided by its job's weight: a batch of a
-- thousand stages of ten keys looks ten up, not a thousand: the turns materialized, which a plan
-- could otherwise look up again for each row it joins); elsewhere a row's turn is its due time.
CREATE OR REPLACE FUNCTION ready_inserted() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    v_slot smallint := ready_slot();
BEGIN
    INSERT INTO ready (slot, queue, rate_key, priority, run_at, job_id, task, fair_key, turn)
    SELECT v_slot, n.queue, n.rate_key, n.priority, n.run_at, n.id, n.chain -> n.stage ->> 'task', NULL, n.run_at
    FROM inserted n
    WHERE n.state = 'available' AND NOT EXISTS (SELECT 1 FROM fair_queues f WHERE f.queue = n.queue);
    IF EXISTS (SELECT 1 FROM fair_queues) THEN
        WITH n AS MATERIALIZED (
            SELECT n.id, n.queue, n.rate_key, n.priority, n.run_at, n.chain -> n.stage ->> 'task' AS task,
                   coalesce(n.fair_key, '') AS k, interval '1 millisecond' / coalesce(n.fair_weight, 1) AS step
            FROM inserted n
            WHERE n.state = 'available' AND EXISTS (SELECT 1 FROM fair_queues f WHERE f.queue = n.queue)
        ), turns AS MATERIALIZED (
            SELECT g.queue, g.rate_key, g.priority, g.k, fair_turn(g.queue, g.rate_key, g.priority, g.k, g.at, g.step)
                       AS base
            FROM (SELECT DISTINCT ON (n.queue, n.rate_key, n.priority, n.k) n.queue, n.rate_key, n.priority, n.k,
                         min(n.run_at) OVER (PARTITION BY n.queue, n.rate_key, n.priority, n.k) AS at, n.step
                  FROM n ORDER BY n.queue, n.rate_key, n.priority, n.k, n.id) g
        )
        -- (each row's turn: its key's first here, then the steps of the rows before it)
        INSERT INTO ready (slot, queue, rate_key, priority, run_at, job_id, task, fair_key, turn)
        SELECT v_slot, n.queue, n.rate_key, n.priority, n.run_at, n.id, n.task, n.k,
               t.base + sum(n.step) OVER (PARTITION BY n.queue, n.rate_key, n.priority, n.k ORDER BY n.id) - n.step
        FROM n JOIN turns t USING (queue, rate_key, priority, k);
    END IF;
    RETURN NULL;
END $$;
