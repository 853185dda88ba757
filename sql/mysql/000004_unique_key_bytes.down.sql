-- Reverts 000004_unique_key_bytes.up.sql. Fails if two keys of one task
-- differ only in trailing spaces, or a key is not valid UTF-8.
ALTER TABLE argo_task MODIFY COLUMN unique_key VARCHAR(255) NULL DEFAULT NULL COMMENT 'optional de-duplication key, unique per task_id';
