-- What a narrower `jobs` row would save in WAL: the same 20,000 jobs inserted, claimed and completed
-- (in transactions of 500, as a worker does) in a copy of Baton's `jobs` table, and in a copy without
-- the columns a job never changes (chain, input, metadata), which go to a table of their own,
-- written once. Prints WAL bytes per job by step for both.
--
--   psql URL -v schema=baton -f bench/wal-split.sql
--
-- `schema`: a schema `baton migrate` made (its `jobs` table is copied, not used). Creates and
-- drops the schemas `wal_wide` and `wal_split`.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS wal_wide CASCADE;
DROP SCHEMA IF EXISTS wal_split CASCADE;
CREATE SCHEMA wal_wide;
CREATE SCHEMA wal_split;
CREATE TABLE wal_wide.jobs (LIKE :schema.jobs INCLUDING ALL);
CREATE TABLE wal_split.jobs (LIKE :schema.jobs INCLUDING ALL);
ALTER TABLE wal_split.jobs DROP COLUMN chain, DROP COLUMN input, DROP COLUMN metadata;
CREATE TABLE wal_split.payloads (id bigint PRIMARY KEY, chain jsonb NOT NULL, input jsonb NOT NULL,
                                 metadata jsonb NOT NULL);
CREATE TEMP TABLE wal_use (layout text, step text, bytes_per_job numeric);

-- Records the WAL written since `p_since` as one step's, per job; returns where the next starts.
CREATE FUNCTION pg_temp.step(p_layout text, p_step text, p_since pg_lsn) RETURNS pg_lsn LANGUAGE sql AS $$
    INSERT INTO wal_use VALUES (p_layout, p_step, pg_wal_lsn_diff(pg_current_wal_insert_lsn(), p_since) / 20000);
    SELECT pg_current_wal_insert_lsn();
$$;

CREATE PROCEDURE pg_temp.run(p_layout text) LANGUAGE plpgsql AS $$
DECLARE
    v_lsn pg_lsn;
    v_chain jsonb := '[{"task": "bench", "retry": {"backoff": {"kind": "constant", "delay": "0s"},
                        "max_attempts": 3}, "timeout": "30s"}]';
BEGIN
    v_lsn := pg_current_wal_insert_lsn();
    FOR i IN 1..40 LOOP
        IF p_layout = 'wide' THEN
            INSERT INTO wal_wide.jobs (queue, state, chain, stage_count, input, metadata)
            SELECT 'default', 'available', v_chain, 1, '{"n": 12345}', '{}' FROM generate_series(1, 500);
        ELSE
            WITH ins AS (
                INSERT INTO wal_split.jobs (queue, state, stage_count)
                SELECT 'default', 'available', 1 FROM generate_series(1, 500) RETURNING id
            )
            INSERT INTO wal_split.payloads SELECT id, v_chain, '{"n": 12345}', '{}' FROM ins;
        END IF;
        COMMIT;
    END LOOP;
    v_lsn := pg_temp.step(p_layout, '1 insert', v_lsn);
    FOR i IN 1..40 LOOP
        EXECUTE format($q$
            WITH next AS (
                SELECT id FROM %I.jobs WHERE state = 'available' AND queue = 'default'
                ORDER BY priority, run_at, id LIMIT 500 FOR UPDATE SKIP LOCKED)
            UPDATE %I.jobs j SET state = 'running', attempt = j.attempt + 1, worker_id = 'worker-1234',
                attempted_at = now()
            WHERE j.id = ANY (ARRAY(SELECT id FROM next))$q$, 'wal_' || p_layout, 'wal_' || p_layout);
        COMMIT;
    END LOOP;
    v_lsn := pg_temp.step(p_layout, '2 claim', v_lsn);
    FOR i IN 1..40 LOOP
        EXECUTE format($q$
            UPDATE %I.jobs j SET state = 'completed', finished_at = now(),
                results = j.results || jsonb_build_array(jsonb_build_object('stage', j.stage, 'output', 'null'::jsonb,
                    'attempts', j.attempt, 'started_at', j.attempted_at, 'finished_at', now()))
            WHERE j.id IN (SELECT id FROM %I.jobs WHERE state = 'running' ORDER BY id LIMIT 500)$q$,
            'wal_' || p_layout, 'wal_' || p_layout);
        COMMIT;
    END LOOP;
    PERFORM pg_temp.step(p_layout, '3 complete', v_lsn);
END $$;

CHECKPOINT;
CALL pg_temp.run('wide');
CHECKPOINT;
CALL pg_temp.run('split');
\unset QUIET
SELECT layout, round(sum(bytes_per_job)) AS bytes_per_job,
       string_agg(step || ': ' || round(bytes_per_job), ', ' ORDER BY step) AS by_step
FROM wal_use GROUP BY layout ORDER BY layout DESC;
DROP SCHEMA wal_wide CASCADE;
DROP SCHEMA wal_split CASCADE;
