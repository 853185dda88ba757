package runtime

import (
	"context"
	"fmt"
)

// GeneratedCall is one call of a durable wrapper argogen generates, field by
// field: the wrappers of a package fill it in and hand it to Submit. It is
// the whole contract between generated code and the runtime (hand-written
// code calls Runtime.Submit with a Call instead). Every field but Task is
// optional; its zero value means "none".
type GeneratedCall struct {
	// Runtime is the runtime the package's generated Register function
	// bound; nil when none was, and Submit then refuses the call with an
	// error wrapping ErrNotPersisted that names Register.
	Runtime *Runtime
	// Register names the generated function that binds Runtime
	// ("pkg.ArgoRegister"), for that error.
	Register string
	// Task is the task definition of the wrapped function (required).
	Task *TaskDef
	// Args is the generated arguments struct, stored as JSON (read back by
	// DecodeJSON).
	Args any
	// ShardBy is Call.ShardBy, from shard-by= ("": a random shard).
	ShardBy string
	// UniqueKey is Call.UniqueKey, from unique-by= ("": none).
	UniqueKey string
	// OrderKey is Call.OrderKey, from order-by= ("": none).
	OrderKey string
	// Tenant, from tenant-by=, is the call's tenant: the submit runs with
	// WithTenant(ctx, Tenant) ("": the context's, TenantFrom).
	Tenant string
	// After is Call.After, from the …DurableAfter wrappers: the call runs
	// after these tasks (docs/dependencies.md); nil: no dependencies.
	After []int64
	// Tx, when not nil, stores the call in the caller's transaction
	// (Runtime.SubmitTx, which refuses After); nil: Runtime.Submit.
	Tx Execer
}

// Submit encodes the call's arguments and stores it: through
// Runtime.SubmitTx in g.Tx when set, else through Runtime.Submit, which
// runs it per its task definition. It returns the task id (0 with an error
// wrapping ErrNotPersisted when nothing was stored: no Task, no Runtime,
// arguments that cannot be stored exactly, or the submit's own refusals).
// Called by generated code.
func (g GeneratedCall) Submit(ctx context.Context) (int64, error) {
	if g.Task == nil {
		return 0, fmt.Errorf("%w: GeneratedCall.Task is nil: generated code always sets it; regenerate with go generate", ErrNotPersisted)
	}
	if g.Runtime == nil {
		return 0, fmt.Errorf("%w: task %s: no runtime is bound: call %s at start-up", ErrNotPersisted, g.Task.Name, g.Register)
	}
	b, err := encodeArgs(g.Args)
	if err != nil {
		return 0, fmt.Errorf("%w: task %s: encoding %s: %w", ErrNotPersisted, g.Task.Name, argumentAt(err), err)
	}
	call := Call{Task: g.Task, Args: b, ShardBy: g.ShardBy, UniqueKey: g.UniqueKey, OrderKey: g.OrderKey, After: g.After}
	if g.Tenant != "" {
		ctx = WithTenant(ctx, g.Tenant)
	}
	if g.Tx != nil {
		return g.Runtime.SubmitTx(ctx, g.Tx, call)
	}
	return g.Runtime.Submit(ctx, call)
}
