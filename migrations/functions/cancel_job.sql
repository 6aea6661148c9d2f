-- Cancel a job that has not finished, with its unfinished group members; lanes they held move on.
-- Returns (id, worker_id) of every job cancelled, so that the workers running them can stop (see
-- `bulk_cancel`, which this is for one job).
CREATE OR REPLACE FUNCTION cancel_job(p_id bigint) RETURNS TABLE (id bigint, worker_id text, watched boolean)
LANGUAGE sql SET search_path FROM CURRENT SET jit = off AS $$
    SELECT * FROM bulk_cancel(ARRAY[p_id]);
$$;
