-- argo schema, version 12, for SQLite 3.35+. Apply after 000010.
-- Column meanings are those of sql/mysql/000012_instance_tenants.up.sql.

ALTER TABLE argo_instance ADD COLUMN tenants TEXT;
