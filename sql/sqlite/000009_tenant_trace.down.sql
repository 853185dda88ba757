-- Reverts 000009_tenant_trace.up.sql.
DROP INDEX IF EXISTS idx_tenant_state;
ALTER TABLE argo_task DROP COLUMN tenant;
ALTER TABLE argo_task DROP COLUMN trace_parent;
