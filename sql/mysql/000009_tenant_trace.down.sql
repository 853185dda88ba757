-- Reverts 000009_tenant_trace.up.sql: tenants and stored trace contexts are lost.
ALTER TABLE argo_task DROP INDEX idx_tenant_state, DROP COLUMN tenant, DROP COLUMN trace_parent;
