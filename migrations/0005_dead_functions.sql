-- Baton schema, version 5: functions live in functions/ and are replaced on every migrate;
-- `claim` is gone (workers since version 4 call `claim_waited`).
DROP FUNCTION IF EXISTS claim(text, int, text);
