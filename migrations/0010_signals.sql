-- Baton schema, version 10: signals, for stages that wait for the outside world.
--
-- An await stage (`{"await": NAME, "timeout_ms"?, "max_attempts"?}` in the chain) is claimed like
-- any stage; the worker finds no signal for it and the job waits: state `waiting`, no lane, no
-- pending members, no worker, `run_at` the end of its wait (`jobs_awaiting`). A signal delivered
-- then makes it available again (`deliver_signal`), and the worker that claims it hands the
-- payload on as the stage's output. A signal delivered earlier is kept here and found when the
-- chain reaches the stage. One signal per job and name: a repeated delivery changes nothing.
CREATE TABLE job_signals (
    job_id      bigint      NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    name        text        NOT NULL,
    payload     jsonb       NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, name)
);

-- expire_awaits: jobs awaiting a signal, by the end of their wait. (A waiting job with a lane waits
-- in it; one with pending members is a group's parent; the rest await a signal.)
CREATE INDEX jobs_awaiting ON jobs (run_at) WHERE state = 'waiting' AND lane IS NULL AND pending IS NULL;

-- Keys the database holds for Baton's processes, made here from PostgreSQL's strong random source
-- (gen_random_uuid: 122 random bits each). `signal-token`: the HMAC key of the one-time tokens that
-- let a third party deliver one signal to one job without an API token.
CREATE TABLE keys (
    name  text  PRIMARY KEY,
    value bytea NOT NULL
);
INSERT INTO keys (name, value) VALUES (
    'signal-token',
    decode(replace(gen_random_uuid()::text || gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
