-- argo schema, version 17, for SQLite 3.35+. Apply after 000016.
-- Column meaning is that of sql/mysql/000017_has_downstream.up.sql.

ALTER TABLE argo_task ADD COLUMN has_downstream INTEGER NOT NULL DEFAULT 0;

UPDATE argo_task SET has_downstream = 1 WHERE has_downstream = 0 AND id IN (SELECT upstream_pk FROM argo_task_dep);
