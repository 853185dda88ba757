-- argo schema, version 14, for SQLite 3.35+. Apply after 000013.
-- Column and index meanings are those of sql/mysql/000014_breaker_trail.up.sql.

ALTER TABLE argo_operator_action ADD COLUMN flow_group TEXT;
CREATE INDEX IF NOT EXISTS idx_action_group ON argo_operator_action (flow_group, id);
