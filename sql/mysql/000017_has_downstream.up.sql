-- argo schema, version 17, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000016.
--
-- has_downstream is 1 on a task some other task runs after (an edge of
-- argo_task_dep names it as upstream_pk), written in the transaction that
-- writes the edge. A finish reads it with the claimed row: a task nobody runs
-- after finishes with its one fenced UPDATE, which also requires
-- has_downstream = 0 (an edge added since the claim fails it, and the finish
-- then runs the dependency release in a transaction), and skips the two
-- dependency statements (docs/dependencies.md). Added at the end with a
-- constant default (no table copy); the UPDATE marks the tasks that have
-- edges already. A process of an older version submitting After does not
-- set it: its dependents are settled by the blocked sweeper (within
-- LeaseDuration + 3×RescueInterval), so upgrade every process.

ALTER TABLE argo_task
  ADD COLUMN has_downstream TINYINT NOT NULL DEFAULT 0 COMMENT '1: a task runs after this one (argo_task_dep); its finish settles the edges';

UPDATE argo_task SET has_downstream = 1 WHERE has_downstream = 0 AND id IN (SELECT upstream_pk FROM argo_task_dep);
