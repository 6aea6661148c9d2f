-- Rows of `ready` (migration 20) are written by triggers on `jobs` whenever a job becomes
-- available, so that no path into `available` forgets the row the claim looks for (claim_for.sql).
-- New jobs that are available: one insert for the statement's rows, into one slot (trigger
-- `jobs_ready_inserted`). In a fair queue (migration 28) each key's new stages take turns after
-- its last (`fair_turn`, once per key and priority, then a millisecond apart in job order);
-- elsewhere a row's turn is its due time.
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
        INSERT INTO ready (slot, queue, rate_key, priority, run_at, job_id, task, fair_key, turn)
        SELECT v_slot, n.queue, n.rate_key, n.priority, n.run_at, n.id, n.chain -> n.stage ->> 'task', n.k,
               fair_turn(n.queue, n.rate_key, n.priority, n.k, n.run_at)
                   + (row_number() OVER (PARTITION BY n.queue, n.rate_key, n.priority, n.k ORDER BY n.id) - 1)
                     * interval '1 millisecond'
        FROM (SELECT n.*, coalesce(n.fair_key, '') AS k FROM inserted n) n
        WHERE n.state = 'available' AND EXISTS (SELECT 1 FROM fair_queues f WHERE f.queue = n.queue);
    END IF;
    RETURN NULL;
END $$;
