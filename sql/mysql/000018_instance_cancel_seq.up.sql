-- argo schema, version 18, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000017.
--
-- cancel_seq counts the cancels of tasks running under this instance's
-- leases (docs/cancel.md): Inspector.Cancel of a running task adds 1 to the
-- row of the task's lease owner in the cancel's own transaction. Every
-- heartbeat's UPDATE is fenced on the value the instance last saw, so a
-- moved counter fails it (0 rows); the instance then reads the row, learns
-- the new value and renews its leases at once, which cancels the cancelled
-- attempt's context: within one HeartbeatInterval of the cancel instead of
-- LeaseDuration/3, with no extra statement in steady state. Added at the
-- end with a constant default (no table copy).

ALTER TABLE argo_instance
  ADD COLUMN cancel_seq BIGINT NOT NULL DEFAULT 0 COMMENT 'cancels of tasks running under this instance''s leases; the heartbeat is fenced on it';
