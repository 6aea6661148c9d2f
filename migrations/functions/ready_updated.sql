-- A job that became available, or changed queue or key while it was (trigger `jobs_ready_updated`,
-- whose condition says when). In a fair queue (migration 28) it takes its key's next turn.
CREATE OR REPLACE FUNCTION ready_updated() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM fair_queues f WHERE f.queue = NEW.queue) THEN
        INSERT INTO ready (slot, queue, rate_key, priority, run_at, job_id, task, fair_key, turn)
        VALUES (ready_slot(), NEW.queue, NEW.rate_key, NEW.priority, NEW.run_at, NEW.id,
                NEW.chain -> NEW.stage ->> 'task', coalesce(NEW.fair_key, ''),
                fair_turn(NEW.queue, NEW.rate_key, NEW.priority, coalesce(NEW.fair_key, ''), NEW.run_at));
    ELSE
        INSERT INTO ready (slot, queue, rate_key, priority, run_at, job_id, task, fair_key, turn)
        VALUES (ready_slot(), NEW.queue, NEW.rate_key, NEW.priority, NEW.run_at, NEW.id,
                NEW.chain -> NEW.stage ->> 'task', NULL, NEW.run_at);
    END IF;
    RETURN NULL;
END $$;
