-- A job that became available, or changed queue or key while it was (trigger `jobs_ready_updated`,
-- whose condition says when).
CREATE OR REPLACE FUNCTION ready_updated() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO ready (slot, queue, rate_key, priority, run_at, job_id, task)
    VALUES (ready_slot(), NEW.queue, NEW.rate_key, NEW.priority, NEW.run_at, NEW.id,
            NEW.chain -> NEW.stage ->> 'task');
    RETURN NULL;
END $$;
