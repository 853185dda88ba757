-- argo schema, version 24, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000022 (and 000023 where present).
--
-- Each recorded transition (docs/semantics.md, "The transitions of a
-- task"): the attempt history row an attempt's (or fallback's) finish
-- writes in its own transaction now says which move that finish made —
-- from_state, to_state: state codes as in argo_task.task_status (running
-- -> retrying, falling_back -> dead ...) — and trace_id, the trace of the
-- attempt's own OpenTelemetry span (32 lower-case hex digits; '' when no
-- tracer records, docs/tenants-and-traces.md). A succeeded attempt still
-- writes no history row (the task row records it: running -> succeeded).
-- Rows written before this migration keep -1 (not recorded) and ''.
-- Added at the end with constant defaults (instant: no table copy).

ALTER TABLE argo_task_attempt
  ADD COLUMN from_state SMALLINT NOT NULL DEFAULT -1 COMMENT 'the state the finish moved the task from (a task_status code); -1: not recorded (before migration 000024)',
  ADD COLUMN to_state   SMALLINT NOT NULL DEFAULT -1 COMMENT 'the state the finish moved the task to (a task_status code); -1: not recorded',
  ADD COLUMN trace_id   VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '' COMMENT 'trace id of the attempt''s span (hex); empty: none recorded';
