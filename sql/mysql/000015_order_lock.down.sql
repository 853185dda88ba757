-- Reverts 000015_order_lock.up.sql: keyed takes then no longer re-check their key (the runtime refuses to
-- start without the table).
DROP TABLE IF EXISTS argo_order_lock;
