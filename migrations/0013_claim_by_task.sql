-- Baton schema, version 13: `claim_waited` and `apply_outcomes` take the tasks the worker runs
-- (`p_tasks`, NULL for any), so that a worker never claims a stage of a task it does not run.
-- The old signatures go: the new ones take the old calls too (the new parameter has a default),
-- and two functions that both matched a call would make it ambiguous. `expire_awaits` returns more
-- columns (what the failure reporter tells), which `CREATE OR REPLACE` cannot change; callers of
-- the previous release select its first three by name, which it keeps.
DROP FUNCTION IF EXISTS claim_waited(text, int, text);
DROP FUNCTION IF EXISTS apply_outcomes(text, jsonb, text[], int[]);
DROP FUNCTION IF EXISTS expire_awaits(int);
