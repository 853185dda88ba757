package runtime

import (
	"time"

	"github.com/argo-retry/argo/argotype"
)

// Millis is a wall-clock instant in Unix milliseconds, the unit of every time
// column of argo_task (argotype.Millis).
type Millis = argotype.Millis

func toMillis(t time.Time) Millis { return Millis(t.UnixMilli()) }

// Mode says when the first attempt runs (argotype.Mode).
type Mode = argotype.Mode

// The modes (see argotype.Mode).
const (
	Immediate = argotype.Immediate
	Scheduled = argotype.Scheduled
)

// Thread says where an immediate first attempt runs (argotype.Thread).
type Thread = argotype.Thread

// The threads (see argotype.Thread).
const (
	Async = argotype.Async
	Sync  = argotype.Sync
)

// Task is one row of argo_task: one durable invocation (argotype.Task).
type Task = argotype.Task

// Attempt is the record of one attempt (or fallback run) of a task (argotype.Attempt).
type Attempt = argotype.Attempt

// Attempt outcomes recorded in argo_task_attempt.outcome.
const (
	OutcomeSucceeded    = argotype.OutcomeSucceeded
	OutcomeFailed       = argotype.OutcomeFailed
	OutcomePermanent    = argotype.OutcomePermanent
	OutcomePanicked     = argotype.OutcomePanicked
	OutcomeTimeout      = argotype.OutcomeTimeout
	OutcomeLeaseExpired = argotype.OutcomeLeaseExpired
)

// taskColumns is the column list of argo_task in Task's field order.
const taskColumns = `id, task_id, task_status, execute_times, max_attempts, execute_time, parameter_types, method_name, method_sign_name, execute_interval_sec, delay_time, task_parameter, performance_way, thread_way, error_msg, alert_expression, alert_action_bean_name, fallback_class_name, fallback_error_msg, shard_key, retry_policy, lease_owner, lease_until, unique_key, discard_reason, gmt_create, gmt_modified, attempt_started_at, attempt_worker`
