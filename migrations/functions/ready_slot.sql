-- The slot a row written now goes to: the second it is written in, modulo the four partitions.
-- `rotate_ready` empties the slots this does not name now or a second ago.
CREATE OR REPLACE FUNCTION ready_slot() RETURNS smallint
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT (floor(extract(epoch FROM clock_timestamp()))::bigint % 4)::smallint
$$;
