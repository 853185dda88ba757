-- Reverts 000008_order_key.up.sql: tasks keep running, without order.
DROP INDEX IF EXISTS idx_order_open;
ALTER TABLE argo_task DROP COLUMN order_key;
