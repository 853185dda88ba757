-- argo schema, version 19, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000017 (and 000018 where present).
--
-- The progress of a long attempt (runtime.ReportProgress, docs/progress.md):
-- the latest report of the task's attempts on the task row, written with a
-- lease renewal (at most once a second per task, no statement of its own)
-- and with the attempt's finish; and the last report of each ended attempt
-- on its argo_task_attempt row, so the history keeps it. progress is the
-- fraction done, 0 to 1; progress_note at most 200 characters;
-- progress_attempt the attempt (execute_times) that made the report on the
-- task row; progress_at when the attempt made it (Unix ms; 0: no report).
-- Added at the end with constant defaults (instant: no table copy).
-- A task that never reports progress writes none of these columns.

ALTER TABLE argo_task
  ADD COLUMN progress DOUBLE NOT NULL DEFAULT 0 COMMENT 'latest progress reported by an attempt, 0 to 1 (runtime.ReportProgress)',
  ADD COLUMN progress_note VARCHAR(200) NOT NULL DEFAULT '' COMMENT 'the note of that report',
  ADD COLUMN progress_attempt INT NOT NULL DEFAULT 0 COMMENT 'the attempt (execute_times) that made it; 0: none',
  ADD COLUMN progress_at BIGINT NOT NULL DEFAULT 0 COMMENT 'when the attempt made it (Unix ms); 0: none';

ALTER TABLE argo_task_attempt
  ADD COLUMN progress DOUBLE NOT NULL DEFAULT 0 COMMENT 'the last progress the attempt reported before it ended',
  ADD COLUMN progress_note VARCHAR(200) NOT NULL DEFAULT '' COMMENT 'the note of that report',
  ADD COLUMN progress_at BIGINT NOT NULL DEFAULT 0 COMMENT 'when the attempt made it (Unix ms); 0: none';
