-- argo schema, version 2, for SQLite 3.35+. Apply after 000001_argo_task.up.sql.
-- Column meanings are those of sql/mysql/000002_attempt_on_task.up.sql.

ALTER TABLE argo_task ADD COLUMN attempt_started_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE argo_task ADD COLUMN attempt_worker TEXT NOT NULL DEFAULT '';
