-- argo schema, version 12, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000010.
--
-- Which tasks an instance works (docs/instance-scope.md): an instance started
-- with Config.Tenants claims only tasks of those tenants, and records them in
-- argo_instance.tenants (one per line; NULL: every tenant). The shard split
-- counts an instance as a holder of a task name only among instances with
-- the same tenants, so a tenant-limited instance never owns shards of the
-- tenants it does not run. Added at the end, nullable: no table copy.

ALTER TABLE argo_instance
  ADD COLUMN tenants MEDIUMTEXT NULL COMMENT 'tenants this instance is limited to, one per line (NULL: every tenant)';
