package argotype

import (
	"database/sql"
	"time"
)

// Millis is a wall-clock instant in Unix milliseconds, the unit of every time
// column of argo_task (execute_time, lease_until, gmt_create, gmt_modified).
type Millis int64

// Time converts m to a time.Time (the zero Time for 0).
func (m Millis) Time() time.Time {
	if m == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(m))
}

// Mode says when the first attempt runs (Argo performanceWay).
type Mode int

const (
	// Immediate runs the first attempt as soon as the row is committed (Argo 1).
	Immediate Mode = 1
	// Scheduled runs the first attempt after the task's first delay (Argo 2).
	Scheduled Mode = 2
)

func (m Mode) String() string {
	if m == Scheduled {
		return "schedule"
	}
	return "immediate"
}

// Thread says where an immediate first attempt runs (Argo threadWay).
type Thread int

const (
	// Async runs the first attempt on the runtime's worker pool (Argo 1).
	Async Thread = 1
	// Sync runs the first attempt in the caller's goroutine and returns its
	// outcome to the caller (Argo 2). Retries always run on the pool.
	Sync Thread = 2
)

func (t Thread) String() string {
	if t == Sync {
		return "sync"
	}
	return "async"
}

// Task is one row of argo_task: one durable invocation.
type Task struct {
	ID                  int64          `db:"id" json:"id"`
	Name                string         `db:"task_id" json:"task_id"`
	State               State          `db:"task_status" json:"task_status"`
	ExecuteTimes        int            `db:"execute_times" json:"execute_times"`
	MaxAttempts         int            `db:"max_attempts" json:"max_attempts"`
	ExecuteTime         Millis         `db:"execute_time" json:"execute_time"`
	ParameterTypes      string         `db:"parameter_types" json:"parameter_types"`
	MethodName          string         `db:"method_name" json:"method_name"`
	MethodSignName      string         `db:"method_sign_name" json:"method_sign_name"`
	ExecuteIntervalSec  int            `db:"execute_interval_sec" json:"execute_interval_sec"`
	DelayTime           int            `db:"delay_time" json:"delay_time"`
	Parameter           string         `db:"task_parameter" json:"task_parameter"`
	PerformanceWay      Mode           `db:"performance_way" json:"performance_way"`
	ThreadWay           Thread         `db:"thread_way" json:"thread_way"`
	ErrorMsg            string         `db:"error_msg" json:"error_msg"`
	AlertExpression     string         `db:"alert_expression" json:"alert_expression"`
	AlertActionBeanName string         `db:"alert_action_bean_name" json:"alert_action_bean_name"`
	FallbackClassName   string         `db:"fallback_class_name" json:"fallback_class_name"`
	FallbackErrorMsg    string         `db:"fallback_error_msg" json:"fallback_error_msg"`
	ShardKey            int            `db:"shard_key" json:"shard_key"`
	RetryPolicyJSON     string         `db:"retry_policy" json:"retry_policy"`
	LeaseOwner          string         `db:"lease_owner" json:"lease_owner"`
	LeaseUntil          Millis         `db:"lease_until" json:"lease_until"`
	UniqueKey           sql.NullString `db:"unique_key" json:"-"`
	DiscardReason       string         `db:"discard_reason" json:"discard_reason"`
	GmtCreate           Millis         `db:"gmt_create" json:"gmt_create"`
	GmtModified         Millis         `db:"gmt_modified" json:"gmt_modified"`
	// The latest attempt's start and worker (0 and "" before the first
	// ends). A succeeded attempt is recorded here rather than in
	// argo_task_attempt; Inspector.Attempts lists it with the others.
	AttemptStartedAt Millis `db:"attempt_started_at" json:"attempt_started_at"`
	AttemptWorker    string `db:"attempt_worker" json:"attempt_worker"`
	// Tenant is who the task is for ("" when the call named none).
	Tenant string `db:"tenant" json:"tenant"`
	// TraceParent is the W3C traceparent of the submitting call's span (""
	// when it had none); the spans of attempts, fallback and alert link to it.
	TraceParent string `db:"trace_parent" json:"trace_parent"`
	// OrderKey, when valid, is the task's ordered key: tasks with the same
	// key run one at a time in id (submit) order (docs/semantics.md,
	// "Ordered keys"). NULL for unordered tasks.
	OrderKey sql.NullString `db:"order_key" json:"-"`
	// DeferredTimes is how many of the task's attempts the callee deferred
	// (runtime.RetryAfter, outcome deferred): they are numbered like the
	// others (ExecuteTimes counts them), but the retry policy counts only
	// ExecuteTimes - DeferredTimes (migration 000016).
	DeferredTimes int `db:"deferred_times" json:"deferred_times"`
	// HasDownstream says some task runs after this one (an edge names it
	// as upstream task), set in the transaction that writes the edge and
	// never cleared (migration 000017). A finish of a task without it skips
	// the dependency statements (docs/dependencies.md).
	HasDownstream bool `db:"has_downstream" json:"has_downstream"`
	// Progress is the latest progress an attempt of the task reported
	// (runtime.ReportProgress), 0 to 1, with its note: written with a lease
	// renewal (at most once a second) and with the attempt's finish
	// (migration 000019, docs/progress.md). Meaningful only when
	// ProgressAttempt > 0.
	Progress     float64 `db:"progress" json:"progress,omitempty"`
	ProgressNote string  `db:"progress_note" json:"progress_note,omitempty"`
	// ProgressAttempt is the attempt (ExecuteTimes) that made that report;
	// 0: no attempt reported progress. It may be earlier than the attempt
	// running now, which has not reported yet.
	ProgressAttempt int `db:"progress_attempt" json:"progress_attempt,omitempty"`
	// ProgressAt is when the attempt made the report (0: none).
	ProgressAt Millis `db:"progress_at" json:"progress_at,omitempty"`
	// ErrorCode is the code of the task's last failed attempt
	// (runtime.Coded or Config.ErrorCode; "": that attempt returned none),
	// written with the failed attempt's outcome and kept when a later
	// attempt succeeds (migration 000021, docs/errors.md).
	ErrorCode string `db:"error_code" json:"error_code,omitempty"`
}

// Attempt is the record of one attempt (or fallback run) of a task: a row of
// argo_task_attempt, or, for the attempt that succeeded, the task row itself
// (ID 0, finished at the task's gmt_modified).
type Attempt struct {
	ID         int64  `db:"id" json:"id"`
	TaskPK     int64  `db:"task_pk" json:"task_pk"`
	Attempt    int    `db:"attempt" json:"attempt"`
	Kind       string `db:"kind" json:"kind"` // "attempt" or "fallback"
	Worker     string `db:"worker" json:"worker"`
	StartedAt  Millis `db:"started_at" json:"started_at"`
	FinishedAt Millis `db:"finished_at" json:"finished_at"`
	Outcome    string `db:"outcome" json:"outcome"`
	Error      string `db:"error_msg" json:"error_msg"`
	BackoffMs  int64  `db:"backoff_ms" json:"backoff_ms"`
	// Progress is the last progress the attempt reported before it ended
	// (runtime.ReportProgress), 0 to 1, with its note, made at ProgressAt
	// (0: the attempt reported none; migration 000019, docs/progress.md).
	Progress     float64 `db:"progress" json:"progress,omitempty"`
	ProgressNote string  `db:"progress_note" json:"progress_note,omitempty"`
	ProgressAt   Millis  `db:"progress_at" json:"progress_at,omitempty"`
	// ErrorCode is the code the attempt's (or fallback's) function returned
	// with its error (runtime.Coded or Config.ErrorCode; "": none;
	// migration 000021, docs/errors.md).
	ErrorCode string `db:"error_code" json:"error_code,omitempty"`
	// From and To are the move the attempt's (or fallback's) finish made,
	// written in the same transaction: running → retrying, running →
	// exhausted, falling_back → dead … (migration 000024, docs/semantics.md
	// "The transitions of a task"). StateUnrecorded (-1) in both: a row
	// written before that migration.
	From State `db:"from_state" json:"from_state"`
	To   State `db:"to_state" json:"to_state"`
	// TraceID is the trace id (32 hex digits) of the attempt's (or
	// fallback's) own span, where its callee's spans are; "" when no
	// tracer recorded one (the default no-op provider) and before migration
	// 000024 (docs/tenants-and-traces.md).
	TraceID string `db:"trace_id" json:"trace_id,omitempty"`
}

// MaxProgressNote is the most characters (runes) of a progress note
// (runtime.ReportProgress): 200, the size of the progress_note columns.
const MaxProgressNote = 200

// Attempt outcomes recorded in argo_task_attempt.outcome.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
	// OutcomeDeferred is an attempt whose callee said when to try again
	// (runtime.RetryAfter): it has its own number, but the retry policy
	// does not count it (Task.DeferredTimes).
	OutcomeDeferred     = "deferred"
	OutcomePermanent    = "permanent"
	OutcomePanicked     = "panicked"
	OutcomeTimeout      = "timeout"
	OutcomeLeaseExpired = "lease_expired"
	// OutcomeCancelled is an attempt that was running when an operator
	// cancelled its task (docs/cancel.md): written by the cancel, its
	// worker's own outcome is not.
	OutcomeCancelled = "cancelled"
)
