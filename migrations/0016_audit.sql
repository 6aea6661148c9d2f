-- Baton schema, version 16: trust between teams.
--
-- `api-fingerprint`: the HMAC key of the token fingerprints the control plane stores with the jobs
-- a token enqueues (`enqueued_by`), used after the keys of `api.fingerprint-keys`, if any.
INSERT INTO keys (name, value) VALUES (
    'api-fingerprint',
    decode(replace(gen_random_uuid()::text || gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));

-- The audit trail: every change made through the control plane (API, CLI, dashboard), written in
-- the transaction of the change, so that a change is recorded exactly when it happened.
--   actor       the token's name (never its secret), or what a Swift caller names itself
--   request_id  the request's X-Request-Id, to find its log line
--   action      the operation (`cancelJob`, `pauseQueue`, `putSchedule`…)
--   target      what it acted on: `job:42`, `jobs` (a bulk batch), `queue:billing`,
--               `schedule:nightly`, `lane:tenant-*`, `rate-limit:partner-api`
--   details     what changed, as JSON (json, not jsonb: kept as written)
-- Pruned by its own retention (`worker.retention-audit`), oldest first through `audit_events_at`.
CREATE TABLE audit_events (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT now(),
    actor      text NOT NULL,
    request_id text,
    action     text NOT NULL,
    target     text NOT NULL,
    details    json NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX audit_events_target ON audit_events (target, id);
