-- Baton schema, version 9: a running stage's progress and checkpoint.
--
-- One row per job and stage whose task reported progress (StageContext.progress). The worker
-- running the stage keeps the latest report in memory and writes it at most once a second, and
-- once more before the attempt's outcome, only while that attempt still runs there (so a worker
-- that lost its lease cannot overwrite a newer attempt's). `checkpoint` is what the next attempt at
-- the same stage resumes from: a failure, a timeout, a lost worker or a retry by hand keep it. The
-- row goes with its job.
CREATE TABLE job_progress (
    job_id     bigint      NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    stage      int         NOT NULL,
    -- the attempt that wrote it
    attempt    int         NOT NULL,
    fraction   double precision CHECK (fraction BETWEEN 0 AND 1),
    message    text,
    checkpoint jsonb,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, stage)
);
