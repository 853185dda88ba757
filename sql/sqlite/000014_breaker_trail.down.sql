DROP INDEX IF EXISTS idx_action_group;
ALTER TABLE argo_operator_action DROP COLUMN flow_group;
