-- argo schema, version 24, for SQLite 3.35+. Apply after 000022 (and 000023 where present).
-- Column meaning is that of sql/mysql/000024_attempt_transitions.up.sql.

ALTER TABLE argo_task_attempt ADD COLUMN from_state INTEGER NOT NULL DEFAULT -1;
ALTER TABLE argo_task_attempt ADD COLUMN to_state INTEGER NOT NULL DEFAULT -1;
ALTER TABLE argo_task_attempt ADD COLUMN trace_id TEXT NOT NULL DEFAULT '';
