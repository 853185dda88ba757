-- argo schema, version 3, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000002_attempt_on_task.up.sql.
--
-- Every submit carries a token the client generates (16 bytes: 8 of Unix
-- milliseconds, big-endian, then 8 random, so new tokens land at the end of
-- the index). When a submit's INSERT fails in a way that leaves its outcome
-- unknown (the connection dropped before the answer, a deadline mid-statement,
-- an error at commit), the runtime runs the same INSERT again: the unique
-- index makes that idempotent, and a duplicate on the token says the first one
-- landed. Rows written before this migration keep NULL (any number of NULLs
-- may share a unique index). The column is instant; the index is built online.

ALTER TABLE argo_task
  ADD COLUMN submit_token BINARY(16) NULL DEFAULT NULL COMMENT 'client-generated identity of the submit that wrote the row (ms + random); NULL before 000003',
  ADD UNIQUE KEY uk_submit_token (submit_token);
