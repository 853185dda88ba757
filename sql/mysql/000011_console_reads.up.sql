-- argo schema, version 11, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000010.
--
-- The console's overview: two indexes,
-- no column. Each was added because EXPLAIN on a 1M-row MariaDB table showed
-- the read scanning the whole table without it (docs/schema.md, "Console
-- reads on argo_task and argo_task_attempt (migration 000011)"):
--   * idx_state_name (task_status, task_id, tenant, execute_time): the
--     counts per state, name and tenant of the unfinished and dead tasks
--     read the index alone (one range, in the index's order), not every row;
--     whether a name has a task due is one short range of it.
--   * idx_attempt_finished (finished_at): the failed attempts and retry
--     lateness of the overview's window are one range of the attempts that
--     finished in it, not a scan of argo_task_attempt.
-- Both are built online (InnoDB ALGORITHM=INPLACE, LOCK=NONE): writes go on
-- meanwhile. A process that finds an index already there (another process
-- applied this file) goes on (error 1061, duplicate key name).

ALTER TABLE argo_task ADD KEY idx_state_name (task_status, task_id, tenant, execute_time);
ALTER TABLE argo_task_attempt ADD KEY idx_attempt_finished (finished_at);
