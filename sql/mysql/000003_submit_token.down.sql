-- Reverts 000003_submit_token.up.sql. Submits whose outcome is unknown can
-- then no longer be resolved: run a runtime that predates 000003.
ALTER TABLE argo_task DROP INDEX uk_submit_token, DROP COLUMN submit_token;
