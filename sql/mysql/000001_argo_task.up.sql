-- argo schema, version 1, for MySQL 8.0+ and MariaDB 10.6+ (InnoDB, utf8mb4).
-- Apply in order: 000001_argo_task.up.sql. Times are Unix milliseconds (BIGINT).

CREATE TABLE IF NOT EXISTS argo_task (
  id                     BIGINT       NOT NULL AUTO_INCREMENT COMMENT 'primary key; the task id shown by argoctl',
  task_id                VARCHAR(255) NOT NULL COMMENT 'task name (Argo task_id): directive name=, default package.Func',
  task_status            TINYINT      NOT NULL DEFAULT 0 COMMENT '0 pending,1 running,2 retrying,3 succeeded,4 exhausted,5 falling_back,6 recovered,7 dead,8 discarded',
  execute_times          INT          NOT NULL DEFAULT 0 COMMENT 'attempts started so far',
  max_attempts           INT          NOT NULL DEFAULT 0 COMMENT 'attempt budget, first attempt included; 0 = unlimited',
  execute_time           BIGINT       NOT NULL COMMENT 'when the next attempt (or fallback) is due, ms',
  parameter_types        VARCHAR(2000) NOT NULL DEFAULT '' COMMENT 'Go types of the parameters, comma separated',
  method_name            VARCHAR(255) NOT NULL DEFAULT '' COMMENT 'Go function or method, e.g. (*Peripherals).LightOn',
  method_sign_name       VARCHAR(2000) NOT NULL DEFAULT '' COMMENT 'full Go signature at generate time',
  execute_interval_sec   INT          NOT NULL DEFAULT 0 COMMENT 'initial retry delay in seconds (informational; retry_policy is exact)',
  delay_time             INT          NOT NULL DEFAULT 0 COMMENT 'first delay in seconds for scheduled tasks (informational)',
  task_parameter         LONGTEXT     NOT NULL COMMENT 'arguments, JSON; no length limit',
  performance_way        TINYINT      NOT NULL DEFAULT 1 COMMENT '1 immediate, 2 schedule',
  thread_way             TINYINT      NOT NULL DEFAULT 1 COMMENT '1 async, 2 sync',
  error_msg              TEXT         NOT NULL COMMENT 'last error (attempt, missing handler, undecodable arguments)',
  alert_expression       VARCHAR(1000) NOT NULL DEFAULT '' COMMENT 'expr-lang alert condition',
  alert_action_bean_name VARCHAR(255) NOT NULL DEFAULT '' COMMENT 'Go function run when the alert holds',
  fallback_class_name    VARCHAR(255) NOT NULL DEFAULT '' COMMENT 'Go fallback function',
  fallback_error_msg     TEXT         NOT NULL COMMENT 'error of the last fallback run',
  shard_key              INT          NOT NULL DEFAULT 0 COMMENT 'shard in [0, shards); routing key for sharded databases',
  retry_policy           VARCHAR(1000) NOT NULL DEFAULT '' COMMENT 'exact retry policy, JSON',
  lease_owner            VARCHAR(128) NOT NULL DEFAULT '' COMMENT 'instance holding the lease while running',
  lease_until            BIGINT       NOT NULL DEFAULT 0 COMMENT 'lease expiry, ms; rescued after it',
  unique_key             VARCHAR(255) NULL     DEFAULT NULL COMMENT 'optional de-duplication key, unique per task_id',
  discard_reason         TEXT         NOT NULL COMMENT 'operator reason for a discard',
  gmt_create             BIGINT       NOT NULL COMMENT 'created, ms',
  gmt_modified           BIGINT       NOT NULL COMMENT 'last state change, ms',
  due_at                 BIGINT GENERATED ALWAYS AS (CASE WHEN task_status IN (0, 2, 4) THEN execute_time END) STORED COMMENT 'execute_time while claimable (pending, retrying, exhausted), else NULL',
  PRIMARY KEY (id),
  UNIQUE KEY uk_task_unique (task_id, unique_key),
  KEY idx_claim_due (due_at) COMMENT 'due-task claim: due_at <= now ORDER BY due_at, one range in order',
  KEY idx_claim (task_status, execute_time) COMMENT 'per-state scans: argoctl, oldest due task, tasks without a handler',
  KEY idx_lease (task_status, lease_until) COMMENT 'lease rescue: status IN (1,5) AND lease_until < now',
  KEY idx_retention (task_status, gmt_modified) COMMENT 'retention purge and argoctl since-filters'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='argo durable calls';

CREATE TABLE IF NOT EXISTS argo_task_attempt (
  id          BIGINT      NOT NULL AUTO_INCREMENT,
  task_pk     BIGINT      NOT NULL COMMENT 'argo_task.id',
  attempt     INT         NOT NULL COMMENT 'attempt number, 1-based',
  kind        VARCHAR(16) NOT NULL DEFAULT 'attempt' COMMENT 'attempt or fallback',
  worker      VARCHAR(128) NOT NULL DEFAULT '' COMMENT 'instance that ran it',
  started_at  BIGINT      NOT NULL COMMENT 'ms',
  finished_at BIGINT      NOT NULL COMMENT 'ms',
  outcome     VARCHAR(32) NOT NULL COMMENT 'succeeded, failed, permanent, panicked, timeout, lease_expired',
  error_msg   TEXT        NOT NULL COMMENT 'error text, with the stack for a panic',
  backoff_ms  BIGINT      NOT NULL DEFAULT 0 COMMENT 'delay chosen before the next attempt',
  PRIMARY KEY (id),
  KEY idx_task (task_pk, attempt)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='argo attempt history';

CREATE TABLE IF NOT EXISTS argo_instance (
  instance_id  VARCHAR(128) NOT NULL COMMENT 'runtime instance (Config.InstanceID)',
  heartbeat_at BIGINT       NOT NULL COMMENT 'last heartbeat, ms',
  started_at   BIGINT       NOT NULL COMMENT 'ms',
  task_names   MEDIUMTEXT   NOT NULL COMMENT 'task names this instance has handlers for, one per line',
  PRIMARY KEY (instance_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='argo live instances (shard split)';

CREATE TABLE IF NOT EXISTS argo_leader (
  name       VARCHAR(64)  NOT NULL COMMENT 'role, e.g. maintenance',
  holder     VARCHAR(128) NOT NULL COMMENT 'instance holding the role',
  expires_at BIGINT       NOT NULL COMMENT 'ms',
  PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='argo maintenance leader election';
