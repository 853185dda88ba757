-- Reverts 000004_unique_key_bytes.up.sql: nothing to undo on SQLite.
SELECT 1;
