-- argo schema, version 5, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000004.
--
-- Operators' work becomes rows (docs/operations.md, "Requeue", "Reviewed
-- discards", "The operator trail"):
--   * a requeue writes a new task linked to the dead (or discarded) one:
--     requeued_from on the new row, requeued_to on the old one, which keeps
--     its state and its history; the unique key, if any, moves to the new row
--     in the same transaction. Both columns are added at the end with NULL
--     defaults: an instant change (no table copy).
--   * argo_operator_action records every operator action (requeue, discard,
--     discard request/approval/rejection, force-fail, run now): who, when, why.
--   * argo_discard_request holds discards awaiting a second operator's
--     approval; pending_task is the task's id while the request is undecided
--     (NULL once decided), so that a task has at most one open request.

ALTER TABLE argo_task
  ADD COLUMN requeued_from BIGINT NULL DEFAULT NULL COMMENT 'the dead or discarded task this one was requeued from (argo_task.id)',
  ADD COLUMN requeued_to   BIGINT NULL DEFAULT NULL COMMENT 'the task this one was requeued into (argo_task.id); set once';

CREATE TABLE IF NOT EXISTS argo_operator_action (
  id         BIGINT       NOT NULL AUTO_INCREMENT,
  task_pk    BIGINT       NOT NULL COMMENT 'argo_task.id acted on',
  action     VARCHAR(32)  NOT NULL COMMENT 'requeue, discard, discard_request, discard_approve, discard_reject, force_fail, run_now',
  operator   VARCHAR(128) NOT NULL COMMENT 'who (argoctl: -operator or the OS user)',
  reason     TEXT         NOT NULL COMMENT 'why, as the operator gave it (may be empty where optional)',
  at         BIGINT       NOT NULL COMMENT 'when, ms',
  other_task BIGINT       NULL DEFAULT NULL COMMENT 'requeue: the new task (argo_task.id)',
  PRIMARY KEY (id),
  KEY idx_action_task (task_pk, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='argo operator trail';

CREATE TABLE IF NOT EXISTS argo_discard_request (
  id              BIGINT       NOT NULL AUTO_INCREMENT,
  task_pk         BIGINT       NOT NULL COMMENT 'argo_task.id to discard',
  pending_task    BIGINT       NULL DEFAULT NULL COMMENT 'task_pk while undecided, NULL once decided: one open request per task',
  requested_by    VARCHAR(128) NOT NULL COMMENT 'operator who asked',
  reason          TEXT         NOT NULL COMMENT 'the discard reason (becomes discard_reason when approved)',
  requested_at    BIGINT       NOT NULL COMMENT 'ms',
  decision        VARCHAR(16)  NOT NULL DEFAULT '' COMMENT 'empty while open, approved or rejected',
  decided_by      VARCHAR(128) NOT NULL DEFAULT '' COMMENT 'the second operator (never requested_by)',
  decided_at      BIGINT       NOT NULL DEFAULT 0 COMMENT 'ms',
  decision_reason TEXT         NOT NULL COMMENT 'why approved or rejected (may be empty)',
  PRIMARY KEY (id),
  UNIQUE KEY uk_discard_pending (pending_task),
  KEY idx_discard_task (task_pk, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='argo discards awaiting a second operator';
