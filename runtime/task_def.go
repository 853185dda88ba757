package runtime

import (
	"context"
	"fmt"
	"time"
)

// TaskDef describes one durable function: what argogen emits for each
// //argo:retry directive. The static fields (everything but the funcs) are
// enough to submit a task; Run is needed only by a runtime that executes it.
type TaskDef struct {
	// Name is the task name stored in argo_task.task_id. It must be stable
	// across refactors: it is how a stored row finds its handler.
	Name string
	// MethodName, Signature and ParameterTypes are stored for operators
	// (columns method_name, method_sign_name, parameter_types).
	MethodName     string
	Signature      string
	ParameterTypes string

	// Mode and Thread choose when and where the first attempt runs.
	// Defaults: Immediate, Async.
	Mode   Mode
	Thread Thread
	// Delay is the first delay of a Scheduled task (Argo delayTime).
	Delay time.Duration
	// Policy is the retry policy; the zero value means DefaultRetryPolicy().
	// A TaskDef with nothing but a Name submits the definition registered
	// under that name (its policy, mode, delay, fallback, alert): Submit
	// refuses it with ErrUnregisteredTask when none is registered, and
	// refuses a zero Policy for a name registered with another policy.
	Policy RetryPolicy

	// Run decodes args (as encoded by the generated wrapper) and calls the
	// function. A decoding failure must be returned wrapped by Undecodable.
	Run func(ctx context.Context, args []byte) error

	// Fallback, if set, runs once attempts are exhausted, with the same
	// arguments and the last attempt's error. Success ends the task
	// recovered; failure ends it dead. FallbackName is stored for operators.
	Fallback     func(ctx context.Context, args []byte, lastErr error) error
	FallbackName string

	// Alert is an expr-lang expression over AlertEnv, evaluated after each
	// failed attempt; when it is true AlertAction runs off the worker path
	// (bounded by Config.AlertTimeout). "" means no alert.
	Alert           string
	AlertAction     func(ctx context.Context, ev AlertEvent) error
	AlertActionName string
	// AlertChannels name entries of Config.AlertChannels the alert is also
	// sent to (directive key alert-channel=); each needs Alert.
	AlertChannels []string

	// Flow, if set, is the flow control of the downstream the task calls
	// (concurrency cap, rate limit, circuit breaker), shared by its group
	// across instances; nil: none (flow_control.go).
	Flow *FlowControl
}

// policy is the policy d's tasks are stored with: DefaultRetryPolicy when
// d.Policy is left empty (every field zero). A policy with some fields set
// but no Backoff is not empty: Validate refuses it rather than replace it.
func (d *TaskDef) policy() RetryPolicy {
	if d.Policy == (RetryPolicy{}) {
		return DefaultRetryPolicy()
	}
	return d.Policy
}

// Validate reports what is wrong with d, naming the task.
func (d *TaskDef) Validate() error {
	if d == nil {
		return fmt.Errorf("argo: nil TaskDef")
	}
	if d.Name == "" {
		return fmt.Errorf("argo: TaskDef has no Name")
	}
	if len(d.Name) > 255 {
		return fmt.Errorf("argo: task name %q is longer than 255 bytes", d.Name)
	}
	if d.Policy != (RetryPolicy{}) && d.Policy.Backoff == "" {
		return fmt.Errorf("argo: task %s: its RetryPolicy sets fields (MaxAttempts %d) but no Backoff: set Backoff (runtime.BackoffFixed, BackoffLinear or BackoffExponential), or leave Policy empty for runtime.DefaultRetryPolicy()", d.Name, d.Policy.MaxAttempts)
	}
	if err := d.policy().Validate(); err != nil {
		return fmt.Errorf("argo: task %s: %w", d.Name, err)
	}
	if d.Mode != 0 && d.Mode != Immediate && d.Mode != Scheduled {
		return fmt.Errorf("argo: task %s: mode %d unknown", d.Name, d.Mode)
	}
	if d.Thread != 0 && d.Thread != Async && d.Thread != Sync {
		return fmt.Errorf("argo: task %s: thread %d unknown", d.Name, d.Thread)
	}
	if d.Delay < 0 {
		return fmt.Errorf("argo: task %s: negative delay", d.Name)
	}
	if d.Alert != "" {
		if _, err := CompileAlert(d.Alert); err != nil {
			return fmt.Errorf("argo: task %s: %w", d.Name, err)
		}
	}
	if len(d.AlertChannels) > 0 && d.Alert == "" {
		return fmt.Errorf("argo: task %s: AlertChannels need an Alert expression", d.Name)
	}
	if err := d.Flow.validate(); err != nil {
		return fmt.Errorf("argo: task %s: %w", d.Name, err)
	}
	return nil
}

// MaxUniqueKeyBytes is the longest Call.UniqueKey, in bytes, on every
// database (argo_task.unique_key is VARBINARY(255) on MySQL). Keys are
// compared byte for byte: "k" and "k " are two keys, and a key need not be
// UTF-8. Hash a longer natural key (SHA-256 in hex is 64 bytes).
const MaxUniqueKeyBytes = 255

// validate reports what makes c unstorable on either database, before
// anything is written.
func (c Call) validate() error {
	if n := len(c.UniqueKey); n > MaxUniqueKeyBytes {
		return fmt.Errorf("unique key of %d bytes is longer than the limit of %d bytes: hash longer keys (SHA-256 in hex is 64 bytes) and pass the hash as the key", n, MaxUniqueKeyBytes)
	}
	if n := len(c.OrderKey); n > MaxOrderKeyBytes {
		return fmt.Errorf("order key of %d bytes is longer than the limit of %d bytes: hash longer keys (SHA-256 in hex is 64 bytes) and pass the hash as the key", n, MaxOrderKeyBytes)
	}
	return nil
}

// prepareCall is prepare for c's task, after c itself is validated: the one
// check of a call that every submit path (Submit, Submit with After,
// SubmitTx, SubmitGroup, and the helpers generated code calls) runs before
// anything is written, so each refuses the same calls with the same error.
func (rt *Runtime) prepareCall(c Call) (*preparedDef, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	if err := orderedCallAllowed(c, rt.handler(c.Task.Name)); err != nil {
		return nil, err
	}
	d, err := rt.resolveDef(c.Task) // a TaskDef that is only a Name: the registered one (submit_by_name.go)
	if err != nil {
		return nil, err
	}
	return rt.prepare(d)
}

// Call is one invocation to persist.
type Call struct {
	// Task is the definition (argogen emits one per directive). Required.
	Task *TaskDef
	// Args are the encoded arguments, stored as they are in task_parameter.
	Args []byte
	// ShardBy, if set, chooses the shard: calls with equal ShardBy share a
	// shard (all tasks of one order, say). Empty spreads calls evenly.
	ShardBy string
	// UniqueKey, if set, makes the call idempotent on enqueue: a second call
	// with the same task name and key is not stored again (ErrDuplicate).
	// Keys compare byte for byte; at most MaxUniqueKeyBytes.
	UniqueKey string
	// RunAt, if set, overrides the first attempt's time (and the mode).
	RunAt time.Time
	// Tenant, if set, is who the task is for (at most MaxTenantBytes);
	// empty takes the tenant of the submit's context (WithTenant), if any.
	Tenant string

	// After lists existing tasks (ids) this call runs after: it is written
	// blocked until every one of them succeeded or recovered, and skipped if
	// one ends dead or discarded (docs/dependencies.md). Submit only (and
	// SubmitGroup); SubmitTx refuses it. Default none.
	After []int64

	// OrderKey, if set, orders the call after every earlier call with the
	// same key (of any task name): it starts only once each of those has
	// ended succeeded, recovered, dead or discarded, on any instance
	// (docs/semantics.md, "Ordered keys"). At most MaxOrderKeyBytes. Empty:
	// unordered, at no cost.
	OrderKey string
}
