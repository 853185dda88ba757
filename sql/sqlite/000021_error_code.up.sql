-- argo schema, version 21, for SQLite 3.35+. Apply after 000019 (before or after 000022: they are independent).
-- Column and table meaning is that of sql/mysql/000021_error_code.up.sql.

ALTER TABLE argo_task ADD COLUMN error_code TEXT NOT NULL DEFAULT '';
ALTER TABLE argo_task_attempt ADD COLUMN error_code TEXT NOT NULL DEFAULT '';
CREATE TABLE IF NOT EXISTS argo_refused_transition (
  source     TEXT NOT NULL,
  from_state TEXT NOT NULL,
  to_state   TEXT NOT NULL,
  refused    INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (source, from_state, to_state)
);
