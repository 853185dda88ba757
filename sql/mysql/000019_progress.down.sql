-- Reverts 000019_progress.up.sql: the progress of attempts is lost (a binary that reads the columns refuses to start).
ALTER TABLE argo_task DROP COLUMN progress, DROP COLUMN progress_note, DROP COLUMN progress_attempt, DROP COLUMN progress_at;
ALTER TABLE argo_task_attempt DROP COLUMN progress, DROP COLUMN progress_note, DROP COLUMN progress_at;
