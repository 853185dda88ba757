-- argo schema, version 22, for SQLite 3.35+. Apply after 000019 (and 000020, 000021 where present).
-- Column meaning is that of sql/mysql/000022_operator_accounts.up.sql. SQLite has no accounts: argo
-- writes '' in both columns.

ALTER TABLE argo_operator_action ADD COLUMN db_account TEXT NOT NULL DEFAULT '';
ALTER TABLE argo_discard_request ADD COLUMN requested_account TEXT NOT NULL DEFAULT '';
