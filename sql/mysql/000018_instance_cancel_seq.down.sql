-- Reverts 000018_instance_cancel_seq.up.sql: a cancel of a running task reaches its instance at its next lease renewal again (a binary that reads the column refuses to start).
ALTER TABLE argo_instance DROP COLUMN cancel_seq;
