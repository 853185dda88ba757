-- argo schema, version 10, for SQLite 3.35+. Apply after 000006.
-- Column meanings are those of sql/mysql/000010_retry_budget.up.sql.

ALTER TABLE argo_flow ADD COLUMN budget_start INTEGER NOT NULL DEFAULT 0;
ALTER TABLE argo_flow ADD COLUMN budget_firsts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE argo_flow ADD COLUMN budget_retries INTEGER NOT NULL DEFAULT 0;
