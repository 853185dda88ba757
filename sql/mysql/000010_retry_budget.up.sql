-- argo schema, version 10, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000006.
--
-- The retry budget of a flow group (docs/flow-control.md, "Retry budget"):
-- the window's start and the first attempts and retries the group started
-- in it, written by the gated claim with the rest of the group's row.
-- Columns added at the end with constant defaults (no table copy).

ALTER TABLE argo_flow
  ADD COLUMN budget_start   BIGINT NOT NULL DEFAULT 0 COMMENT 'retry budget: start of the window (Unix ms)',
  ADD COLUMN budget_firsts  INT    NOT NULL DEFAULT 0 COMMENT 'retry budget: first attempts started in the window',
  ADD COLUMN budget_retries INT    NOT NULL DEFAULT 0 COMMENT 'retry budget: retries started in the window';
