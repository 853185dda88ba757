-- argo schema, version 2, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000001_argo_task.up.sql.
--
-- The latest attempt's start and worker move onto the task row, so that a
-- success is one UPDATE of argo_task: the attempt that succeeded is recorded
-- there (attempt number execute_times, started attempt_started_at, finished
-- gmt_modified, run by attempt_worker) instead of in argo_task_attempt, which
-- keeps every other attempt (failures, timeouts, panics, expired leases) and
-- every fallback run. Both columns are added at the end with constant
-- defaults: an instant change on MariaDB 10.3+ and MySQL 8.0.29+ (no table copy).

ALTER TABLE argo_task
  ADD COLUMN attempt_started_at BIGINT       NOT NULL DEFAULT 0  COMMENT 'start of the latest attempt, ms; 0 before its first',
  ADD COLUMN attempt_worker     VARCHAR(128) NOT NULL DEFAULT '' COMMENT 'instance that ran the latest attempt';
