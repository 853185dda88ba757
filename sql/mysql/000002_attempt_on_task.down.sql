-- Reverts 000002_attempt_on_task.up.sql. Succeeded attempts recorded on the
-- task row since then lose their start time and worker.
ALTER TABLE argo_task DROP COLUMN attempt_started_at, DROP COLUMN attempt_worker;
