ALTER TABLE argo_flow DROP COLUMN grants;
