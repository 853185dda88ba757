-- Reverts 000017_has_downstream.up.sql: every finish runs the dependency statements again (a binary that reads the column refuses to start).
ALTER TABLE argo_task DROP COLUMN has_downstream;
