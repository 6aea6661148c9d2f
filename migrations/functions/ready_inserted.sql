-- Rows of `ready` (migration 20) are written by triggers on `jobs` whenever a job becomes
-- available, so that no path into `available` forgets the row the claim looks for (claim_for.sql).
-- New jobs that are available: one insert for the statement's rows, into one slot (trigger
-- `jobs_ready_inserted`).
CREATE OR REPLACE FUNCTION ready_inserted() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    v_slot smallint := ready_slot();
BEGIN
    INSERT INTO ready (slot, queue, rate_key, priority, run_at, job_id, task)
    SELECT v_slot, n.queue, n.rate_key, n.priority, n.run_at, n.id, n.chain -> n.stage ->> 'task'
    FROM inserted n WHERE n.state = 'available';
    RETURN NULL;
END $$;
