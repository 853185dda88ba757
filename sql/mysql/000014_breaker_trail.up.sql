-- argo schema, version 14, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000013.
--
-- The operator trail records a flow group's breaker opened or closed by hand
-- (argoctl flow open|close, the console; docs/flow-control.md): a row of
-- argo_operator_action with task_pk 0, action breaker_open or breaker_close,
-- and the group in the new column flow_group (NULL on every task's row). The
-- column is added at the end, nullable (no table copy); the index is built
-- online.

ALTER TABLE argo_operator_action
  ADD COLUMN flow_group VARCHAR(255) NULL DEFAULT NULL COMMENT 'breaker_open, breaker_close: the flow group (argo_flow.group_name); NULL for a task''s action';
ALTER TABLE argo_operator_action ADD KEY idx_action_group (flow_group, id);
