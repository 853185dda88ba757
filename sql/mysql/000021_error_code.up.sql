-- argo schema, version 21, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000019 (before or after 000022: they are independent).
--
-- The error code of a failed attempt (runtime.Coded, Config.ErrorCode;
-- docs/errors.md): error_code on argo_task_attempt is the code the
-- attempt's (or fallback's) function returned; error_code on argo_task the
-- code of the task's last failed attempt ('' : that attempt returned no
-- code). A code is 1 to 64 characters of A-Z a-z 0-9 _ . - : (the runtime
-- refuses any other before it is written), stored as ASCII and compared
-- byte for byte on both engines. No index: a list by code scans as a list
-- by error text does. Added at the end with constant defaults (no table
-- copy).
--
-- argo_refused_transition counts the state changes an operator asked for
-- (argoctl, the console, the Inspector API) that the state machine
-- refused, by where they came from and the move (from -> to): the metrics
-- of every instance show the count (argo_operator_transitions_refused_total),
-- whichever process was refused. At most sources x 11 x 11 rows.

ALTER TABLE argo_task
  ADD COLUMN error_code VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '' COMMENT 'the code of the last failed attempt (runtime.Coded); empty: none';

ALTER TABLE argo_task_attempt
  ADD COLUMN error_code VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '' COMMENT 'the code the attempt returned (runtime.Coded); empty: none';

CREATE TABLE IF NOT EXISTS argo_refused_transition (
  source     VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'argoctl, console or api (Inspector.Source)',
  from_state VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'the name of the state the task was in',
  to_state   VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'the name of the state the operator asked for',
  refused    BIGINT NOT NULL DEFAULT 0 COMMENT 'how many times',
  PRIMARY KEY (source, from_state, to_state)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='refused operator transitions (docs/errors.md)';
