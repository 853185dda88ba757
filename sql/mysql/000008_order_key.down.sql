-- Reverts 000008_order_key.up.sql: tasks keep running, without order.
ALTER TABLE argo_task DROP KEY idx_order_open, DROP COLUMN order_open, DROP COLUMN order_key;
