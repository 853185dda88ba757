-- Reverts 000014_breaker_trail.up.sql: the breaker actions' rows lose their group.
ALTER TABLE argo_operator_action DROP INDEX idx_action_group, DROP COLUMN flow_group;
