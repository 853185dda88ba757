package runtime

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
)

// Inspector reads and repairs argo's tables for operators (argoctl uses
// it): look at tasks and their attempts, requeue dead ones, discard others.
// It needs no running Runtime.
type Inspector struct {
	store *storage.Store
	// Now is the clock used for "now" (requeue and discard times, stats
	// windows and lag). Default time.Now; tests set a fixed clock.
	Now func() time.Time
	// Operator is who the changes (requeue, discard and its review,
	// force-fail, run now) are recorded as made by in the operator trail
	// (at most 128 characters). Default DefaultOperator ("inspector").
	Operator string
	// SingleOperatorDiscard lets Discard and DiscardWhere end tasks at
	// once, without a second operator; the trail records each as a
	// discard (not a discard_request and its approval). Default false: a
	// discard needs two people (seed 001): Discard and DiscardWhere refuse
	// with ErrDiscardNeedsApproval, and a discard is requested
	// (RequestDiscard) and approved by a different operator
	// (ApproveDiscard). Cancel is not affected (it stops work now).
	SingleOperatorDiscard bool
	// SameAccountApproval lets ApproveDiscard approve a request made from
	// the same database account (MySQL's CURRENT_USER(); SQLite has no
	// accounts), as long as the operator names differ. Default false:
	// refused with ErrSameAccount, so that one person connected as
	// themselves cannot approve their own request under another name. Set
	// it where operators share one account and are authenticated by the
	// tool itself: the console does.
	SameAccountApproval bool
	// Source names where this Inspector's changes come from in the count
	// of refused operator transitions (argo_refused_transition, metric
	// argo_operator_transitions_refused_total): argoctl sets "argoctl", the
	// console "console". 1 to 16 characters of A-Z a-z 0-9 _ . - : (any
	// other is counted as "other"). Default "api".
	Source string

	// The runtime's Config.InstanceTimeout and Config.Shards (Overview);
	// zero from NewInspector: Config's defaults.
	instanceTimeout time.Duration
	shards          int
}

// NewInspector wraps an open database handle of the given dialect, as
// OpenDB returns it ("mysql" or "sqlite"; another dialect panics).
func NewInspector(db *sql.DB, dialect string) *Inspector {
	return &Inspector{store: newStore(db, dialect)}
}

// Inspector returns an Inspector on the runtime's database, on the
// runtime's clock (the database's: docs/clocks.md).
func (rt *Runtime) Inspector() *Inspector {
	return &Inspector{store: rt.store, Now: rt.now, instanceTimeout: rt.cfg.InstanceTimeout, shards: rt.cfg.Shards}
}

func (in *Inspector) now() time.Time {
	if in.Now != nil {
		return in.Now()
	}
	return time.Now()
}

// CheckSchema returns a *SchemaError if the argo tables are missing.
func (in *Inspector) CheckSchema(ctx context.Context) error { return in.store.CheckSchema(ctx) }

// Get returns one task, or an error wrapping ErrNotFound.
func (in *Inspector) Get(ctx context.Context, id int64) (*Task, error) { return in.store.Get(ctx, id) }

// Attempts returns the attempt history of a task, oldest first.
func (in *Inspector) Attempts(ctx context.Context, id int64) ([]Attempt, error) {
	return in.store.Attempts(ctx, id)
}

// Requeue is RequeueWithReason without a reason.
func (in *Inspector) Requeue(ctx context.Context, id int64) error {
	return in.RequeueWithReason(ctx, id, "")
}

// Discard ends a pending, retrying, exhausted or dead task; reason is
// required and stored in discard_reason. A running task is refused (wait
// for its attempt to end).
func (in *Inspector) Discard(ctx context.Context, id int64, reason string) error {
	if !in.SingleOperatorDiscard {
		return ErrDiscardNeedsApproval
	}
	if strings.TrimSpace(reason) == "" {
		return errors.New("argo: discard needs a reason (it is recorded in discard_reason)")
	}
	return in.refused(ctx, in.store.DiscardRecorded(ctx, id, reason, in.operator(), toMillis(in.now())))
}

// CountByState returns how many tasks are in each state.
func (in *Inspector) CountByState(ctx context.Context) (map[State]int, error) {
	return in.store.CountByState(ctx)
}

// List returns the tasks f selects, newest id first, paged by f.Limit and f.Offset.
func (in *Inspector) List(ctx context.Context, f Filter) ([]*Task, error) {
	sf, err := in.resolveNames(ctx, f)
	if err != nil {
		return nil, err
	}
	return in.store.List(ctx, sf)
}

// Count returns how many tasks f selects, ignoring Limit and Offset.
func (in *Inspector) Count(ctx context.Context, f Filter) (int, error) {
	sf, err := in.resolveNames(ctx, f)
	if err != nil {
		return 0, err
	}
	return in.store.Count(ctx, sf)
}

// NameStateCount is the number of tasks of one name in one state.
type NameStateCount = argotype.NameStateCount

// DueTask is the task that has waited longest past its due time.
type DueTask = argotype.DueTask

// Stats is a snapshot of the tables for operators (argoctl stats;
// argotype.Stats documents its fields).
type Stats = argotype.Stats

// Stats counts tasks per state and per name, finds the oldest due task, and
// computes retry and dead rates over the last window.
func (in *Inspector) Stats(ctx context.Context, window time.Duration) (*Stats, error) {
	return in.store.Stats(ctx, in.now(), window)
}

// Which states RequeueWhere and DiscardWhere may change (the state machine's
// sources of → pending and → discarded that an operator may use).
var (
	requeueFrom = []State{StateDead, StateDiscarded}
	discardFrom = []State{StatePending, StateRetrying, StateExhausted, StateDead}
)

// restrict narrows f to the states in allowed (all of them when f names none).
func restrict(f Filter, allowed []State) Filter {
	if len(f.States) == 0 {
		f.States = allowed
		return f
	}
	var keep []State
	for _, s := range f.States {
		for _, a := range allowed {
			if s == a {
				keep = append(keep, s)
				break
			}
		}
	}
	if keep == nil {
		keep = []State{-1} // no state both asked for and allowed: match nothing
	}
	f.States = keep
	return f
}

// ids returns the ids f selects, newest first.
func (in *Inspector) ids(ctx context.Context, f Filter) ([]int64, error) {
	sf, err := in.resolveNames(ctx, f)
	if err != nil {
		return nil, err
	}
	return in.store.IDs(ctx, sf)
}

// RequeueWhere requeues (as Requeue does) every dead or discarded task f
// selects; tasks in other states never match. With dryRun it changes
// nothing and returns how many tasks would be requeued. A task that changed
// state between the selection and its update is skipped, not counted.
// An empty Filter matches every dead and discarded task: callers that take
// filters from users should refuse it unless asked explicitly.
func (in *Inspector) RequeueWhere(ctx context.Context, f Filter, dryRun bool) (int, error) {
	return in.RequeueWhereWithReason(ctx, f, "", dryRun)
}

// RequeueWhereWithReason is RequeueWhere recording reason with each
// requeue, as RequeueWithReason does.
func (in *Inspector) RequeueWhereWithReason(ctx context.Context, f Filter, reason string, dryRun bool) (int, error) {
	if err := storage.CheckOperatorText("requeue reason", reason); err != nil {
		return 0, err
	}
	f.NotRequeued = true
	return in.changeWhere(ctx, restrict(f, requeueFrom), dryRun, func(ctx context.Context, id int64) error {
		return in.RequeueWithReason(ctx, id, reason)
	})
}

// DiscardWhere discards (as Discard does, with reason) every pending,
// retrying, exhausted or dead task f selects. The reason is required, even
// for a dry run. Otherwise it behaves like RequeueWhere.
func (in *Inspector) DiscardWhere(ctx context.Context, f Filter, reason string, dryRun bool) (int, error) {
	if !in.SingleOperatorDiscard {
		return 0, ErrDiscardNeedsApproval
	}
	if strings.TrimSpace(reason) == "" {
		return 0, errors.New("argo: discard needs a reason (it is recorded in discard_reason)")
	}
	if err := storage.CheckOperatorText("discard reason", reason); err != nil {
		return 0, err
	}
	f.NotRequeued = true
	return in.changeWhere(ctx, restrict(f, discardFrom), dryRun, func(ctx context.Context, id int64) error {
		return in.Discard(ctx, id, reason)
	})
}

// changeWhere applies change to each task f selects. Each change is the
// store's own state-guarded UPDATE, so a row that moved meanwhile is refused
// by the database and skipped here.
func (in *Inspector) changeWhere(ctx context.Context, f Filter, dryRun bool, change func(context.Context, int64) error) (int, error) {
	ids, err := in.ids(ctx, f)
	if err != nil || dryRun {
		return len(ids), err
	}
	// Oldest first: an upstream task is requeued before the tasks after it
	// (whose requeue then runs after its new task, docs/dependencies.md), and
	// requeued calls of one order key enter its order as they were.
	slices.Sort(ids)
	n := 0
	for _, id := range ids {
		err := change(ctx, id)
		switch {
		case err == nil:
			n++
		case errors.Is(err, ErrTransitionInvalid), errors.Is(err, ErrNotFound):
			// Changed or purged since the selection: skip it.
		default:
			return n, err
		}
	}
	return n, nil
}
