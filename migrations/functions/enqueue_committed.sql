-- `enqueue`, committed before it answers (as `claim_committed` does for claims): the row a caller
-- receives proves the jobs are committed, so no commit check follows and an enqueue is one round
-- trip shorter. One element per job given, in order; a job that vanished (see `enqueue`) has id 0
-- and '' for its text, since array elements are decoded without NULLs. Not for a caller's own
-- transaction (CALL with COMMIT must run outside one): that path calls `enqueue`.
DO $create$ BEGIN EXECUTE format($procedure$
CREATE OR REPLACE PROCEDURE %1$I.enqueue_committed(
    p_jobs jsonb,
    INOUT ids bigint[], INOUT queues text[], INOUT states text[], INOUT inserted boolean[],
    INOUT run_at timestamptz[], INOUT created_at timestamptz[])
LANGUAGE plpgsql AS $body$
BEGIN
    SELECT coalesce(array_agg(coalesce(e.id, 0)), '{}'), coalesce(array_agg(coalesce(e.queue, '')), '{}'),
           coalesce(array_agg(coalesce(e.state::text, '')), '{}'), coalesce(array_agg(e.inserted), '{}'),
           coalesce(array_agg(coalesce(e.run_at, 'epoch')), '{}'),
           coalesce(array_agg(coalesce(e.created_at, 'epoch')), '{}')
    INTO ids, queues, states, inserted, run_at, created_at
    FROM %1$I.enqueue(p_jobs) e;
    COMMIT;
END $body$
$procedure$, current_schema());
END $create$;
