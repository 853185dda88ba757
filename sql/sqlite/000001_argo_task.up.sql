-- argo schema, version 1, for SQLite 3.35+ (the embedded default). Times are Unix milliseconds.
-- Column meanings are those of sql/mysql/000001_argo_task.up.sql.

CREATE TABLE IF NOT EXISTS argo_task (
  id                     INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id                TEXT    NOT NULL,
  task_status            INTEGER NOT NULL DEFAULT 0,
  execute_times          INTEGER NOT NULL DEFAULT 0,
  max_attempts           INTEGER NOT NULL DEFAULT 0,
  execute_time           INTEGER NOT NULL,
  parameter_types        TEXT    NOT NULL DEFAULT '',
  method_name            TEXT    NOT NULL DEFAULT '',
  method_sign_name       TEXT    NOT NULL DEFAULT '',
  execute_interval_sec   INTEGER NOT NULL DEFAULT 0,
  delay_time             INTEGER NOT NULL DEFAULT 0,
  task_parameter         TEXT    NOT NULL,
  performance_way        INTEGER NOT NULL DEFAULT 1,
  thread_way             INTEGER NOT NULL DEFAULT 1,
  error_msg              TEXT    NOT NULL DEFAULT '',
  alert_expression       TEXT    NOT NULL DEFAULT '',
  alert_action_bean_name TEXT    NOT NULL DEFAULT '',
  fallback_class_name    TEXT    NOT NULL DEFAULT '',
  fallback_error_msg     TEXT    NOT NULL DEFAULT '',
  shard_key              INTEGER NOT NULL DEFAULT 0,
  retry_policy           TEXT    NOT NULL DEFAULT '',
  lease_owner            TEXT    NOT NULL DEFAULT '',
  lease_until            INTEGER NOT NULL DEFAULT 0,
  unique_key             TEXT    NULL     DEFAULT NULL,
  discard_reason         TEXT    NOT NULL DEFAULT '',
  gmt_create             INTEGER NOT NULL,
  gmt_modified           INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS uk_task_unique ON argo_task (task_id, unique_key);
CREATE INDEX IF NOT EXISTS idx_claim ON argo_task (task_status, execute_time);
CREATE INDEX IF NOT EXISTS idx_claim_due ON argo_task (execute_time) WHERE task_status IN (0, 2, 4);
CREATE INDEX IF NOT EXISTS idx_lease ON argo_task (task_status, lease_until);
CREATE INDEX IF NOT EXISTS idx_retention ON argo_task (task_status, gmt_modified);

CREATE TABLE IF NOT EXISTS argo_task_attempt (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  task_pk     INTEGER NOT NULL,
  attempt     INTEGER NOT NULL,
  kind        TEXT    NOT NULL DEFAULT 'attempt',
  worker      TEXT    NOT NULL DEFAULT '',
  started_at  INTEGER NOT NULL,
  finished_at INTEGER NOT NULL,
  outcome     TEXT    NOT NULL,
  error_msg   TEXT    NOT NULL DEFAULT '',
  backoff_ms  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS idx_attempt_task ON argo_task_attempt (task_pk, attempt);

CREATE TABLE IF NOT EXISTS argo_instance (
  instance_id  TEXT    PRIMARY KEY,
  heartbeat_at INTEGER NOT NULL,
  started_at   INTEGER NOT NULL,
  task_names   TEXT    NOT NULL DEFAULT ''
);

CREATE TABLE IF NOT EXISTS argo_leader (
  name       TEXT    PRIMARY KEY,
  holder     TEXT    NOT NULL,
  expires_at INTEGER NOT NULL
);
