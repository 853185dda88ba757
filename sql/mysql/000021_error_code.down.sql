-- Reverts 000021_error_code.up.sql: the error codes and the refused-transition counts are lost (a binary that reads them refuses to start).
ALTER TABLE argo_task DROP COLUMN error_code;
ALTER TABLE argo_task_attempt DROP COLUMN error_code;
DROP TABLE IF EXISTS argo_refused_transition;
