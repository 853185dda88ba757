-- argo schema, version 16, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000015.
--
-- A deferred attempt (the function returned runtime.RetryAfter: the callee
-- said when to try again) is an attempt like any other: it has its own
-- attempt number (execute_times), idempotency key and history row (outcome
-- deferred), but it does not use up the retry policy's attempts. The new
-- column counts a task's deferred attempts, so that the policy counts
-- execute_times - deferred_times (docs/flow-control.md, "Retry-After").
-- Added at the end with a constant default (no table copy).

ALTER TABLE argo_task
  ADD COLUMN deferred_times INT NOT NULL DEFAULT 0 COMMENT 'attempts deferred by the callee (RetryAfter): numbered, not counted by the retry policy';
