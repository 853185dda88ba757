-- Reverts 000022_operator_accounts.up.sql: the trail no longer records database accounts (a binary that writes them refuses to start).
ALTER TABLE argo_discard_request DROP COLUMN requested_account;
ALTER TABLE argo_operator_action DROP COLUMN db_account;
