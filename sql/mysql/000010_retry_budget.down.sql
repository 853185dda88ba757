ALTER TABLE argo_flow DROP COLUMN budget_start, DROP COLUMN budget_firsts, DROP COLUMN budget_retries;
