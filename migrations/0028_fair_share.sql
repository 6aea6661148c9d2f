-- Fair share between the keys of a queue (issue 49): a job may name a fairness key (`fair_key`,
-- a tenant), and in a queue where jobs have named one, claims take the keys' stages in turns
-- instead of in the order they became ready, so that one key's flood does not hold another's
-- trickle back. The turn is decided when a stage becomes ready, in the database (`fair_turn`):
-- `ready.turn` is what the claim orders by. Outside fair queues a row's turn is its due time
-- (`run_at`), the order of every version before: a queue none of whose jobs names a key claims
-- as it did.
--
-- A queue becomes fair the first time a job that names a key is enqueued into it (or names it
-- for a stage), and stays so (`fair_queues`); its stages without a key then share the key ''.
ALTER TABLE jobs ADD COLUMN fair_key text;
-- The job's weight under its key (NULL: 1): each of its stages spends 1/weight of its key's turns,
-- so that a key whose jobs weigh 2 takes twice the turns of a key whose jobs weigh 1.
ALTER TABLE jobs ADD COLUMN fair_weight float8;
-- A schedule's job names them too; each slot's job is enqueued with them.
ALTER TABLE schedules ADD COLUMN fair_key text;
ALTER TABLE schedules ADD COLUMN fair_weight float8;
-- `key_from`: where a job enqueued into the queue without a key finds one (`metadata.tenant`,
-- `input.customer`: `fair_key_of`), set by an admin (`PUT /v1/queues/{name}/fair-key`) or by the
-- settings file's `fair_keys:` (`key_from_source`, 'api' or 'settings': a file clears only what it
-- set); NULL: jobs name their own.
CREATE TABLE fair_queues (queue text PRIMARY KEY, key_from text, key_from_source text);
-- `turn`: the claim's order within a priority. `fair_key`: the job's key ('' for none) in a fair
-- queue, NULL elsewhere (so that `ready_keys` holds only fair queues' rows).
ALTER TABLE ready ADD COLUMN fair_key text;
ALTER TABLE ready ADD COLUMN turn timestamptz;
UPDATE ready SET turn = run_at;
ALTER TABLE ready ALTER COLUMN turn SET NOT NULL;
DROP INDEX ready_order;
CREATE INDEX ready_order ON ready (queue, rate_key, priority, turn, job_id);
-- A key's last turn in its queue, read newest first.
CREATE INDEX ready_keys ON ready (queue, fair_key, turn) WHERE fair_key IS NOT NULL;
-- Each fair queue's claims per key and minute, as estimated by the workers that claimed them
-- (`{"tenant-42": 120, …}`, the keys with the most, `fair_starts_added`): what `GET /v1/queues`
-- shows as each key's share of recent starts. NULL: no claim of a fair queue that minute.
ALTER TABLE queue_minutes ADD COLUMN fair_starts jsonb;
