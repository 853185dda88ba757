-- Reverts 000015_order_lock.up.sql.
DROP TABLE IF EXISTS argo_order_lock;
