-- argo schema, version 18, for SQLite 3.35+. Apply after 000017.
-- Column meaning is that of sql/mysql/000018_instance_cancel_seq.up.sql.

ALTER TABLE argo_instance ADD COLUMN cancel_seq INTEGER NOT NULL DEFAULT 0;
