-- argo schema, version 7, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000006.
--
-- Dependencies between tasks (docs/dependencies.md): one row per edge
-- "task_pk runs after upstream_pk". A task with an upstream task not yet
-- succeeded is written blocked (task_status 9: outside the claim index, so a
-- waiting task costs no claim polling). The transaction that ends an upstream
-- task records its outcome on its edges and, in that same transaction, makes
-- due (pending) every blocked task whose edges are all satisfied, or skips
-- (task_status 10) every blocked task downstream of a dead or discarded one.
CREATE TABLE IF NOT EXISTS argo_task_dep (
  task_pk          BIGINT  NOT NULL COMMENT 'argo_task.id of the downstream task (runs after upstream_pk)',
  upstream_pk      BIGINT  NOT NULL COMMENT 'argo_task.id of the upstream task',
  upstream_outcome TINYINT NOT NULL DEFAULT 0 COMMENT '0 not finished, 1 succeeded or recovered, 2 dead or discarded',
  created_at       BIGINT  NOT NULL COMMENT 'ms',
  PRIMARY KEY (task_pk, upstream_pk),
  KEY idx_dep_upstream (upstream_pk, upstream_outcome) COMMENT 'downstream tasks of a finishing task'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='argo task dependencies (edges of the DAG)';
