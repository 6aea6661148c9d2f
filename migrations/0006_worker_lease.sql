-- Baton schema, version 6: each worker writes its lease, so that "live" means what the worker
-- itself promises (a heartbeat within its lease), for the control plane's "why is this job not
-- running?" and the dashboard's list of workers. Workers of version 5 leave the default.
ALTER TABLE workers ADD COLUMN lease interval NOT NULL DEFAULT '15 seconds';
