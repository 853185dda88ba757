-- argo schema, version 15, for SQLite 3.35+. Apply after 000014.
-- Column meanings are those of sql/mysql/000015_order_lock.up.sql. SQLite
-- does not use the table: one transaction writes at a time, and a
-- transaction that inserted a keyed row holds the write lock until it ends,
-- so ids follow commit order and the claim's order gate, one statement
-- under that lock, is exact. It is created so that both schemas have the
-- same versions.

CREATE TABLE IF NOT EXISTS argo_order_lock (
  order_key TEXT    NOT NULL PRIMARY KEY,
  holder    INTEGER NOT NULL DEFAULT 0,
  takes     INTEGER NOT NULL DEFAULT 0
);
