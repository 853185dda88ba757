-- argo schema, version 13, for SQLite 3.35+. Apply after 000012.
-- Column meanings are those of sql/mysql/000013_flow_grants.up.sql.

ALTER TABLE argo_flow ADD COLUMN grants TEXT;
