-- argo schema, version 6, for SQLite 3.35+. Apply after 000005.
-- Column meaning is that of sql/mysql/000006_flow_control.up.sql.
CREATE TABLE IF NOT EXISTS argo_flow (
  group_name    TEXT    NOT NULL PRIMARY KEY,
  members       TEXT    NOT NULL,
  lock_seq      INTEGER NOT NULL DEFAULT 0,
  tokens        REAL    NOT NULL DEFAULT 0,
  refilled_at   INTEGER NOT NULL DEFAULT 0,
  breaker_state INTEGER NOT NULL DEFAULT 0,
  breaker_until INTEGER NOT NULL DEFAULT 0,
  cooldown_ms   INTEGER NOT NULL DEFAULT 0,
  probe_task    INTEGER NOT NULL DEFAULT 0,
  window_start  INTEGER NOT NULL DEFAULT 0,
  window_ok     INTEGER NOT NULL DEFAULT 0,
  window_failed INTEGER NOT NULL DEFAULT 0,
  closed_at     INTEGER NOT NULL DEFAULT 0,
  opened_count  INTEGER NOT NULL DEFAULT 0,
  updated_at    INTEGER NOT NULL DEFAULT 0
);
