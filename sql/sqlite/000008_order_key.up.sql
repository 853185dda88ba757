-- argo schema, version 8, for SQLite 3.35+. Apply after 000007.
-- Column meaning is that of sql/mysql/000008_order_key.up.sql. The partial
-- index idx_order_open holds only unfinished keyed rows (pending, running,
-- retrying, exhausted, falling_back, blocked), as MySQL's order_open column does.
ALTER TABLE argo_task ADD COLUMN order_key TEXT NULL DEFAULT NULL;
CREATE INDEX IF NOT EXISTS idx_order_open ON argo_task (order_key, id) WHERE order_key IS NOT NULL AND task_status IN (0, 1, 2, 4, 5, 9);
