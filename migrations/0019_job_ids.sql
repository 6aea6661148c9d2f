-- Baton schema, version 19: job ids that no failover or restore can give out twice.
--
-- An identity column counts on: a standby promoted after losing the last seconds of WAL, or a
-- restore to an earlier point, starts again from where its copy of the sequence stood, and gives the
-- ids of jobs it never saw to new jobs. A caller holding an id then reads another job, and the `http`
-- task's `Idempotency-Key: <id>-<stage>` reaches a partner API from two different jobs (measured:
-- 296 of 304 lost ids given out again after an asynchronous standby 3 s behind was promoted).
--
-- An id is now the time it was drawn, in milliseconds since 2026-01-01 UTC, times 4096, plus a
-- counter that cycles through 0–4095: a lost sequence only repeats a counter, and the time has moved
-- on by the failover or the restore. Two ids could only meet if the database's clock read the same
-- millisecond twice with the counter at the same place: the clock set back by more than the time
-- since the lost jobs, or 4096 ids drawn within one millisecond (about 40 times Baton's rate here).
-- Ids stay below 2^53 until 2095, so JavaScript's numbers hold them exactly, and they still grow
-- with time, as the keyset pages (newest first) and the claim's tie-breaks expect. Ids given before
-- this version are smaller than every id given after it.
--
-- The function is here rather than in functions/: the column's default names it, so it must exist
-- before the functions are replaced. It runs inside `enqueue` and `apply_outcomes_for`, which set
-- `jit = off` for it.
CREATE SEQUENCE job_id_counter MINVALUE 0 MAXVALUE 4095 START 0 CYCLE;

-- The counter is named with its schema, written in when the function is made: the function stays
-- plain SQL the planner inlines into the insert (a `SET search_path` would make every id a call).
DO $do$ BEGIN
    EXECUTE format($f$
        CREATE FUNCTION new_job_id() RETURNS bigint LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
            SELECT (floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1767225600000) * 4096
                   + nextval(%L)
        $$ $f$, current_schema() || '.job_id_counter');
END $do$;

ALTER TABLE jobs ALTER COLUMN id DROP IDENTITY;
ALTER TABLE jobs ALTER COLUMN id SET DEFAULT new_job_id();
