-- argo schema, version 19, for SQLite 3.35+. Apply after 000017 (and 000018 where present).
-- Column meaning is that of sql/mysql/000019_progress.up.sql.

ALTER TABLE argo_task ADD COLUMN progress REAL NOT NULL DEFAULT 0;
ALTER TABLE argo_task ADD COLUMN progress_note TEXT NOT NULL DEFAULT '';
ALTER TABLE argo_task ADD COLUMN progress_attempt INTEGER NOT NULL DEFAULT 0;
ALTER TABLE argo_task ADD COLUMN progress_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE argo_task_attempt ADD COLUMN progress REAL NOT NULL DEFAULT 0;
ALTER TABLE argo_task_attempt ADD COLUMN progress_note TEXT NOT NULL DEFAULT '';
ALTER TABLE argo_task_attempt ADD COLUMN progress_at INTEGER NOT NULL DEFAULT 0;
