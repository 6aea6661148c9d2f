-- A job that became available, or changed queue or key while it was (trigger `jobs_ready_updated`,
-- whose condition says when). In a fair queue (migration 28) it takes its key's next turn (a
-- millisecond of turns after its last, divided by the job's weight);
-- elsewhere its turn is its due time.
CREATE OR REPLACE FUNCTION ready_updated() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    v_key text := CASE WHEN EXISTS (SELECT 1 FROM fair_queues f WHERE f.queue = NEW.queue)
                       THEN coalesce(NEW.fair_key, '') END;
BEGIN
    INSERT INTO ready (slot, queue, rate_key, priority, run_at, job_id, task, fair_key, turn)
    VALUES (ready_slot(), NEW.queue, NEW.rate_key, NEW.priority, NEW.run_at, NEW.id,
            NEW.chain -> NEW.stage ->> 'task', v_key,
            CASE WHEN v_key IS NULL THEN NEW.run_at
                 ELSE fair_turn(NEW.queue, NEW.rate_key, NEW.priority, v_key, NEW.run_at,
                                interval '1 millisecond' / coalesce(NEW.fair_weight, 1)) END);
    RETURN NULL;
END $$;
