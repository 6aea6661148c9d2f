-- The turn (`ready.turn`, migration 28) of a stage of key `p_key` that becomes ready in fair queue
-- `p_queue`: start-time fair queuing, decided when the stage becomes ready. A key with stages
-- waiting in the queue takes the turn `p_step` after its last one (one millisecond of turns for a
-- stage of weight 1, half that for one of weight 2, `jobs.fair_weight`); a key
-- with none takes the turn at the head of the claim's order for its rate key and priority, so that
-- it is next, however long the others' backlog, and gets no credit for the time it had nothing to
-- run. When several keys have stages waiting, the claim, ordered by turn, so takes one of each in
-- rotation; one key alone takes every slot. (`p_at`, the stage's due time, is the turn of a queue
-- with nothing waiting.) Both look-ups are a probe of an index of `ready`, whose slots rotation
-- empties: what they step over is the rows claimed in the last seconds, as for a claim.
CREATE OR REPLACE FUNCTION fair_turn(p_queue text, p_rate_key text, p_priority smallint, p_key text,
                                     p_at timestamptz, p_step interval) RETURNS timestamptz
LANGUAGE sql STABLE SET search_path FROM CURRENT SET jit = off AS $$
    SELECT greatest(
        coalesce((SELECT min(r.turn) FROM ready r
                  WHERE r.queue = p_queue AND r.rate_key = p_rate_key AND r.priority = p_priority), p_at),
        (SELECT max(r.turn) FROM ready r WHERE r.queue = p_queue AND r.fair_key = p_key)
            + p_step)
$$;
