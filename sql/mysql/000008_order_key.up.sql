-- argo schema, version 8, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000007.
--
-- Ordered keys (docs/semantics.md, "Ordered keys"): calls submitted with the
-- same order key run one at a time, in submit (id) order. A keyed row is a
-- claim candidate only while no row of its key with a smaller id is
-- unfinished. order_open is the key while the row is unfinished (pending,
-- running, retrying, exhausted, falling_back, blocked) and NULL otherwise, so the
-- claim's check is one short range of idx_order_open (order_open, id) over
-- the key's unfinished rows only. Rows without a key keep both columns NULL
-- for ever: their index entry is written once, at the insert, and never
-- changes with their state. order_open is STORED (as due_at is): adding it
-- copies the table, plan the migration like 000001's.
ALTER TABLE argo_task
  ADD COLUMN order_key  VARCHAR(255) NULL DEFAULT NULL COMMENT 'ordered key: same-key tasks run one at a time in id order; NULL = unordered',
  ADD COLUMN order_open VARCHAR(255) GENERATED ALWAYS AS (CASE WHEN task_status IN (0, 1, 2, 4, 5, 9) THEN order_key END) STORED COMMENT 'order_key while unfinished, else NULL',
  ADD KEY idx_order_open (order_open, id);
