-- Baton schema, step 2: what the HTTP control plane needs.
--   * paused queues: workers claim nothing from a queue listed here (pause/resume);
--   * who enqueued a job (a fingerprint of the API token), so an `enqueue` token reads its own jobs;
--   * retry of a discarded or cancelled job.

CREATE TABLE paused_queues (
    queue     text PRIMARY KEY,
    paused_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE jobs ADD COLUMN enqueued_by text;
