-- Reverts 000024_attempt_transitions.up.sql: the attempts' recorded moves and trace ids are lost (a binary that writes them refuses to start).
ALTER TABLE argo_task_attempt DROP COLUMN from_state, DROP COLUMN to_state, DROP COLUMN trace_id;
