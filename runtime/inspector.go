package runtime

import (
	"context"
	"database/sql"
	"fmt"
)

// Inspector reads and repairs argo's tables for operators (argoctl uses
// it): look at tasks and their attempts, requeue dead ones, discard others.
// It needs no running Runtime.
type Inspector struct {
	store *store
}

// NewInspector wraps an open database handle of the given dialect.
func NewInspector(db *sql.DB, dialect string) *Inspector {
	return &Inspector{store: newStore(db, dialect)}
}

// Inspector returns an Inspector on the runtime's database.
func (rt *Runtime) Inspector() *Inspector { return &Inspector{store: rt.store} }

// CheckSchema returns a *SchemaError if the argo tables are missing.
func (in *Inspector) CheckSchema(ctx context.Context) error { return in.store.checkSchema(ctx) }

// Get returns one task, or an error wrapping ErrNotFound.
func (in *Inspector) Get(ctx context.Context, id int64) (*Task, error) { return in.store.get(ctx, id) }

// Attempts returns the attempt history of a task, oldest first.
func (in *Inspector) Attempts(ctx context.Context, id int64) ([]Attempt, error) {
	return in.store.attempts(ctx, id)
}

// Requeue moves a dead or discarded task back to pending with a fresh
// attempt budget, due now. Any other state is refused with a
// *TransitionError (WF_STATE_TRANSITION_INVALID).
func (in *Inspector) Requeue(ctx context.Context, id int64) error {
	return in.store.requeue(ctx, id, nowMillis())
}

// Discard ends a pending, retrying, exhausted or dead task; reason is
// required and stored in discard_reason. A running task is refused (wait
// for its attempt to end).
func (in *Inspector) Discard(ctx context.Context, id int64, reason string) error {
	return in.store.discard(ctx, id, reason, nowMillis())
}

// CountByState returns how many tasks are in each state.
func (in *Inspector) CountByState(ctx context.Context) (map[State]int, error) {
	var rows []struct {
		State State `db:"task_status"`
		N     int   `db:"n"`
	}
	if err := in.store.db.SelectContext(ctx, &rows, "SELECT task_status, COUNT(*) AS n FROM argo_task GROUP BY task_status"); err != nil {
		return nil, fmt.Errorf("argo: count tasks: %w", err)
	}
	out := map[State]int{}
	for _, r := range rows {
		out[r.State] = r.N
	}
	return out, nil
}
