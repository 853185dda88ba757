-- argo schema, version 3, for SQLite 3.35+. Apply after 000002_attempt_on_task.up.sql.
-- Column meaning is that of sql/mysql/000003_submit_token.up.sql.

ALTER TABLE argo_task ADD COLUMN submit_token BLOB;
CREATE UNIQUE INDEX IF NOT EXISTS uk_submit_token ON argo_task (submit_token);
