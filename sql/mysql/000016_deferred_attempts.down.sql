-- Reverts 000016_deferred_attempts.up.sql: deferred attempts count against the retry policy again.
ALTER TABLE argo_task DROP COLUMN deferred_times;
