-- argo schema, version 9, for SQLite 3.35+. Apply after 000008.
-- Column meanings are those of sql/mysql/000009_tenant_trace.up.sql.

ALTER TABLE argo_task ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE argo_task ADD COLUMN trace_parent TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS idx_tenant_state ON argo_task (tenant, task_status);
