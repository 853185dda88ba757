-- Reverts 000011_console_reads.up.sql.
DROP INDEX IF EXISTS idx_attempt_finished;
DROP INDEX IF EXISTS idx_state_name;
