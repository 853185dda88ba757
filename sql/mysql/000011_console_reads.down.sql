-- Reverts 000011_console_reads.up.sql: the console's overview reads scan again.
ALTER TABLE argo_task DROP INDEX idx_state_name;
ALTER TABLE argo_task_attempt DROP INDEX idx_attempt_finished;
