-- The fairness key of job `p_index` of an enqueued batch that names none, entering fair queue
-- `p_queue`, which takes them from `p_from` (its `key_from`: `metadata.tenant`,
-- `input.customer.id`; migration 28): the text there in the job's metadata or input. NULL when the
-- job has nothing (or null) there: its stages then share the key '' (and its `waiting_for` says
-- why). Anything else than text of 1 to 200 characters there refuses the batch (SQLSTATE BT422,
-- DETAIL the job's index, HINT the path), as a `fair_key` given so would be.
CREATE OR REPLACE FUNCTION fair_key_of(p_queue text, p_from text, p_metadata jsonb, p_input jsonb, p_index int)
RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path FROM CURRENT SET jit = off AS $$
DECLARE
    v_value jsonb := CASE split_part(p_from, '.', 1) WHEN 'metadata' THEN p_metadata ELSE p_input END
                     #> string_to_array(substr(p_from, strpos(p_from, '.') + 1), '.');
BEGIN
    IF v_value IS NULL OR v_value = 'null'::jsonb THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v_value) <> 'string' OR length(v_value #>> '{}') NOT BETWEEN 1 AND 200
       OR (v_value #>> '{}') ~ '[\x01-\x1f\x7f-\x9f]' THEN
        RAISE EXCEPTION 'queue % takes fairness keys from %, where this job holds %, not text of 1 to 200 characters',
            p_queue, p_from, CASE jsonb_typeof(v_value) WHEN 'string' THEN 'text of another length or with control characters'
                                                        WHEN 'object' THEN 'an object' WHEN 'array' THEN 'an array'
                                                        ELSE 'a ' || jsonb_typeof(v_value) END
            USING ERRCODE = 'BT422', DETAIL = p_index::text, HINT = p_from;
    END IF;
    RETURN v_value #>> '{}';
END $$;
