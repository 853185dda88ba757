ALTER TABLE argo_instance DROP COLUMN tenants;
