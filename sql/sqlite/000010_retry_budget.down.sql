ALTER TABLE argo_flow DROP COLUMN budget_retries;
ALTER TABLE argo_flow DROP COLUMN budget_firsts;
ALTER TABLE argo_flow DROP COLUMN budget_start;
