-- argo schema, version 7, for SQLite 3.35+. Apply after 000006.
-- Column meaning is that of sql/mysql/000007_task_dependencies.up.sql.
CREATE TABLE IF NOT EXISTS argo_task_dep (
  task_pk          INTEGER NOT NULL,
  upstream_pk      INTEGER NOT NULL,
  upstream_outcome INTEGER NOT NULL DEFAULT 0,
  created_at       INTEGER NOT NULL,
  PRIMARY KEY (task_pk, upstream_pk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idx_dep_upstream ON argo_task_dep (upstream_pk, upstream_outcome);
