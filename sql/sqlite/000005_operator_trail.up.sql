-- argo schema, version 5, for SQLite 3.35+. Apply after 000004.
-- Column meanings are those of sql/mysql/000005_operator_trail.up.sql.

ALTER TABLE argo_task ADD COLUMN requeued_from INTEGER NULL DEFAULT NULL;
ALTER TABLE argo_task ADD COLUMN requeued_to INTEGER NULL DEFAULT NULL;

CREATE TABLE IF NOT EXISTS argo_operator_action (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  task_pk    INTEGER NOT NULL,
  action     TEXT    NOT NULL,
  operator   TEXT    NOT NULL,
  reason     TEXT    NOT NULL DEFAULT '',
  at         INTEGER NOT NULL,
  other_task INTEGER NULL DEFAULT NULL
);
CREATE INDEX IF NOT EXISTS idx_action_task ON argo_operator_action (task_pk, id);

CREATE TABLE IF NOT EXISTS argo_discard_request (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  task_pk         INTEGER NOT NULL,
  pending_task    INTEGER NULL DEFAULT NULL,
  requested_by    TEXT    NOT NULL,
  reason          TEXT    NOT NULL DEFAULT '',
  requested_at    INTEGER NOT NULL,
  decision        TEXT    NOT NULL DEFAULT '',
  decided_by      TEXT    NOT NULL DEFAULT '',
  decided_at      INTEGER NOT NULL DEFAULT 0,
  decision_reason TEXT    NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX IF NOT EXISTS uk_discard_pending ON argo_discard_request (pending_task);
CREATE INDEX IF NOT EXISTS idx_discard_task ON argo_discard_request (task_pk, id);
