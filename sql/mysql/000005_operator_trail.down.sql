-- Reverts 000005_operator_trail.up.sql: the operator trail, open discard
-- requests and the links between requeued tasks are lost (the tasks stay).
DROP TABLE IF EXISTS argo_discard_request;
DROP TABLE IF EXISTS argo_operator_action;
ALTER TABLE argo_task DROP COLUMN requeued_to, DROP COLUMN requeued_from;
