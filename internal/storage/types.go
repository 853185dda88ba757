package storage

import (
	"context"
	"database/sql"
	"time"

	"github.com/argo-retry/argo/argotype"
)

// The shared types the store reads and writes (see argotype).
type (
	Task    = argotype.Task
	Attempt = argotype.Attempt
	State   = argotype.State
	Millis  = argotype.Millis
)

// SchemaError says the argo tables are missing or out of date, and what to
// apply (see argotype).
type SchemaError = argotype.SchemaError

// MigrationStep is one file Migrate recorded in argo_schema_migrations
// (see argotype).
type MigrationStep = argotype.MigrationStep

// The task states (see argotype.State).
const (
	StatePending     = argotype.StatePending
	StateRunning     = argotype.StateRunning
	StateRetrying    = argotype.StateRetrying
	StateSucceeded   = argotype.StateSucceeded
	StateExhausted   = argotype.StateExhausted
	StateFallingBack = argotype.StateFallingBack
	StateRecovered   = argotype.StateRecovered
	StateDead        = argotype.StateDead
	StateDiscarded   = argotype.StateDiscarded
	StateBlocked     = argotype.StateBlocked
	StateSkipped     = argotype.StateSkipped
	// StateUnrecorded: an attempt row's move before migration 000024.
	StateUnrecorded = argotype.StateUnrecorded
)

// OutcomeSucceeded is the outcome of an attempt that succeeded.
const OutcomeSucceeded = argotype.OutcomeSucceeded

// OutcomeDeferred is the outcome of an attempt deferred by its callee
// (RetryAfter): numbered, counted in deferred_times.
const OutcomeDeferred = argotype.OutcomeDeferred

// Dialect names (Config.Dialect and OpenDB in runtime).
const (
	DialectMySQL  = "mysql"
	DialectSQLite = "sqlite"
)

// Execer is what a transactional submit writes through: *sql.Tx, *sqlx.Tx,
// *sql.DB and *sql.Conn all satisfy it.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// TaskColumns is the column list of argo_task in Task's field order.
const TaskColumns = `id, task_id, task_status, execute_times, max_attempts, execute_time, parameter_types, method_name, method_sign_name, execute_interval_sec, delay_time, task_parameter, performance_way, thread_way, error_msg, alert_expression, alert_action_bean_name, fallback_class_name, fallback_error_msg, shard_key, retry_policy, lease_owner, lease_until, unique_key, discard_reason, gmt_create, gmt_modified, attempt_started_at, attempt_worker, tenant, trace_parent, order_key, deferred_times, has_downstream, progress, progress_note, progress_attempt, progress_at, error_code`

// ToMillis converts t to Unix milliseconds.
func ToMillis(t time.Time) Millis { return Millis(t.UnixMilli()) }

// LeaseKey names one lease an instance holds: a task and the attempt
// (execute_times) it was taken for. Renewal is fenced on both and on the
// instance as owner, so a lease that was rescued and claimed again, here or
// elsewhere, is never extended on behalf of the old attempt. Shard is the
// row's shard_key, which the renewal names beside the id
// (docs/deployment.md).
type LeaseKey struct {
	ID      int64
	Shard   int
	Attempt int
}

// ClaimGroup is a set of task names with the same holders, and the shards
// of theirs this instance owns (nil: all).
type ClaimGroup struct {
	Names  []string
	Shards []int
	// Tenants, if set, limits the group to tasks of these tenants ("" is
	// a task without one); nil: every tenant (instance_scope.go).
	Tenants []string
}

// checkTransition returns a *argotype.TransitionError if from → to is not allowed.
func checkTransition(taskID int64, from, to State) error {
	return argotype.CheckTransition(taskID, from, to)
}
