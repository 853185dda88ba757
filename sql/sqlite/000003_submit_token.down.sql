-- Reverts 000003_submit_token.up.sql.
DROP INDEX IF EXISTS uk_submit_token;
ALTER TABLE argo_task DROP COLUMN submit_token;
