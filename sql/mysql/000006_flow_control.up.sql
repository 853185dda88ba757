-- argo schema, version 6, for MySQL 8.0+ and MariaDB 10.6+. Apply after 000005.
--
-- Flow control per group of task names (docs/flow-control.md): one row per
-- group holds what every instance must agree on. Every gated claim of the
-- group reads this row FOR UPDATE in its transaction and writes it back
-- (lock_seq + 1), so claims of one group are serialised across instances
-- (on Galera the write makes two claims on different nodes conflict at
-- certification); the concurrency
-- cap counts the group's running rows inside that transaction, the rate
-- limit is a token bucket in tokens/refilled_at, and the circuit breaker
-- is breaker_state with its window counters.
CREATE TABLE IF NOT EXISTS argo_flow (
  group_name    VARCHAR(255) NOT NULL COMMENT 'flow group: a task name, or a group named by limit=/rate=/breaker=',
  members       TEXT         NOT NULL COMMENT 'task names of the group, one per line (union of every instance''s)',
  lock_seq      BIGINT       NOT NULL DEFAULT 0 COMMENT 'incremented by every gated claim and outcome (certification on Galera)',
  tokens        DOUBLE       NOT NULL DEFAULT 0 COMMENT 'rate limit: attempts that may start now',
  refilled_at   BIGINT       NOT NULL DEFAULT 0 COMMENT 'rate limit: when tokens was last refilled (Unix ms); 0 = never (full bucket)',
  breaker_state TINYINT      NOT NULL DEFAULT 0 COMMENT '0 closed, 1 open, 2 half-open (one probe out), 3 opened by an operator',
  breaker_until BIGINT       NOT NULL DEFAULT 0 COMMENT 'open: end of the cool-down; half-open: the probe''s deadline (Unix ms)',
  cooldown_ms   BIGINT       NOT NULL DEFAULT 0 COMMENT 'current cool-down (doubles at each failed probe)',
  probe_task    BIGINT       NOT NULL DEFAULT 0 COMMENT 'half-open: argo_task.id of the probe',
  window_start  BIGINT       NOT NULL DEFAULT 0 COMMENT 'breaker: start of the failure window (Unix ms)',
  window_ok     INT          NOT NULL DEFAULT 0 COMMENT 'breaker: attempts succeeded in the window',
  window_failed INT          NOT NULL DEFAULT 0 COMMENT 'breaker: attempts failed in the window',
  closed_at     BIGINT       NOT NULL DEFAULT 0 COMMENT 'breaker: when it last closed (the bounded release runs from here)',
  opened_count  INT          NOT NULL DEFAULT 0 COMMENT 'breaker: times opened, for metrics',
  updated_at    BIGINT       NOT NULL DEFAULT 0 COMMENT 'last change (Unix ms)',
  PRIMARY KEY (group_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='argo flow control per group (caps, rate limits, circuit breakers)';
