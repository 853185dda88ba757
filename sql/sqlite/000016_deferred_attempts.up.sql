-- argo schema, version 16, for SQLite 3.35+. Apply after 000015.
-- Column meaning is that of sql/mysql/000016_deferred_attempts.up.sql.

ALTER TABLE argo_task ADD COLUMN deferred_times INTEGER NOT NULL DEFAULT 0;
