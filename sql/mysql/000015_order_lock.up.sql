-- argo schema, version 15, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000014.
--
-- Ordered keys (docs/semantics.md, "Ordered keys"): one row per order key a
-- claim has taken a call of. Every take of a keyed call locks its key's row
-- (INSERT … ON DUPLICATE KEY UPDATE), re-checks under that lock that no
-- earlier call of the key is unfinished and that the key's holder (the call
-- the key's last take started) is not running, retrying or falling back,
-- takes the call and makes it the holder, in one transaction. So two takes
-- of one key are serialised, and a call never starts while another of its
-- key has started and not ended, whatever the ids (MySQL hands out an id at
-- the INSERT, not at the commit: an outbox submit in a long transaction
-- becomes visible after later calls of its key). Every take changes the row
-- (takes + 1), so on Galera two takes of one key on two nodes conflict at
-- certification. Calls without a key never touch the table. A new table:
-- no copy of argo_task.

CREATE TABLE IF NOT EXISTS argo_order_lock (
  order_key VARCHAR(255) NOT NULL COMMENT 'argo_task.order_key',
  holder    BIGINT       NOT NULL DEFAULT 0 COMMENT 'argo_task.id of the call the last take of the key started; 0 none',
  takes     BIGINT       NOT NULL DEFAULT 0 COMMENT 'takes of the key so far (each take changes the row)',
  PRIMARY KEY (order_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='argo order keys: the lock and holder of each key''s takes';
