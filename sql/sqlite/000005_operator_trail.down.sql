-- Reverts 000005_operator_trail.up.sql.
DROP TABLE IF EXISTS argo_discard_request;
DROP TABLE IF EXISTS argo_operator_action;
ALTER TABLE argo_task DROP COLUMN requeued_to;
ALTER TABLE argo_task DROP COLUMN requeued_from;
