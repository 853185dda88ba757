-- Reverts 000002_attempt_on_task.up.sql.
ALTER TABLE argo_task DROP COLUMN attempt_worker;
ALTER TABLE argo_task DROP COLUMN attempt_started_at;
