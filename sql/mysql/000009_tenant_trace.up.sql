-- argo schema, version 9, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000008.
--
-- Tenants and traces (docs/tenants-and-traces.md):
--   * tenant: who the task is for ('' when the call named none): from the
--     directive key tenant-by=param, Call.Tenant or runtime.WithTenant. The
--     index (tenant, task_status) serves argoctl -tenant and the dead-letter
--     gauge per tenant. VARBINARY: tenants compare byte for byte, as on
--     SQLite (under the table's PAD SPACE utf8mb4_bin, "eu" and "eu " would be
--     one tenant); at most 128 bytes, which the runtime checks before it writes.
--   * trace_parent: the W3C traceparent of the submitting call's span
--     ('' when it had none); every attempt, fallback and alert span links to it.
-- Both columns are added at the end with constant defaults: an instant
-- change (no table copy); the index is built online.

ALTER TABLE argo_task
  ADD COLUMN tenant       VARBINARY(128) NOT NULL DEFAULT '' COMMENT 'tenant of the task, compared byte for byte (empty: none)',
  ADD COLUMN trace_parent VARCHAR(64)    NOT NULL DEFAULT '' COMMENT 'W3C traceparent of the submitting call (empty: none)',
  ADD KEY idx_tenant_state (tenant, task_status);
