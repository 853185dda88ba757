-- argo schema, version 11, for SQLite 3.35+. Apply after 000010.
-- Index meanings are those of sql/mysql/000011_console_reads.up.sql.

CREATE INDEX IF NOT EXISTS idx_state_name ON argo_task (task_status, task_id, tenant, execute_time);
CREATE INDEX IF NOT EXISTS idx_attempt_finished ON argo_task_attempt (finished_at);
