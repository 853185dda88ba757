-- argo schema, version 4, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000003.
--
-- unique_key compares byte for byte, as on SQLite: under utf8mb4_bin (a PAD
-- SPACE collation on MariaDB and on MySQL's utf8mb4_bin) "k" and "k " were one
-- key, and a key with bytes that are not UTF-8 was refused. VARBINARY(255)
-- keeps the limit of 255 bytes, which the runtime checks on both databases
-- before it writes. The unique index uk_task_unique (task_id, unique_key) is
-- kept (rebuilt with the column). The change of character set copies the
-- table (ALGORITHM=COPY, writes blocked meanwhile): apply it when argo_task is
-- small or in a quiet hour.

ALTER TABLE argo_task MODIFY COLUMN unique_key VARBINARY(255) NULL DEFAULT NULL COMMENT 'optional de-duplication key, unique per task_id, compared byte for byte; at most 255 bytes';
