-- argo schema, version 4, for SQLite 3.35+. Apply after 000003.
-- Column meanings are those of sql/mysql/000004_unique_key_bytes.up.sql.
--
-- Nothing changes here: unique_key is TEXT under SQLite's BINARY collation,
-- which already compares keys byte for byte ("k" and "k " are two keys) and
-- stores bytes that are not UTF-8 as they are. The 255-byte limit is the
-- runtime's, the same on both databases. The statement below only restates
-- the unique index, so that this file applies like every other.

CREATE UNIQUE INDEX IF NOT EXISTS uk_task_unique ON argo_task (task_id, unique_key);
