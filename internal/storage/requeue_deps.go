package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// A requeue keeps the dependencies (docs/dependencies.md, "Requeue"): the
// new task runs after the same upstream tasks as the old one, each judged
// as a submit with Call.After judges it now, so a task discarded while
// blocked and requeued while its upstream task still runs waits for it
// again (before, the new task was written pending, due now, without edges,
// and ran while its upstream task ran).

// maxRequeueHops bounds the walk along an upstream task's requeue links.
const maxRequeueHops = 10_000

// requeueEdge is one edge of a requeued task's new row: the upstream task
// and the outcome the edge starts with.
type requeueEdge struct {
	upstream int64
	outcome  int
}

// requeueDependencies reads, in the requeue's transaction tx, the upstream
// tasks of task old and returns the edges of its new task and whether the
// new task must be written blocked. An upstream task that was requeued is
// replaced by its newest task (following requeued_to). Each upstream task
// is then read locked (DepUpstreamStates: a finish of it waits for the
// requeue and then sees the new edge): succeeded or recovered, the edge is
// written settled; unfinished, unsettled (the new task is blocked); dead,
// discarded or skipped (and not requeued), the requeue is refused with an
// error wrapping ErrDependency. An edge whose upstream task was purged
// after it succeeded is kept settled.
func (s *Store) requeueDependencies(ctx context.Context, tx *sqlx.Tx, old int64) ([]requeueEdge, bool, error) {
	var edges []struct {
		Task     int64 `db:"task_pk"`
		Upstream int64 `db:"upstream_pk"`
		Outcome  int   `db:"upstream_outcome"`
		State    State `db:"task_status"`
	}
	if err := tx.SelectContext(ctx, &edges, s.sql.DepEdgesOf(1), old); err != nil {
		return nil, false, err
	}
	if len(edges) == 0 {
		return nil, false, nil
	}
	var ups []int64
	var out []requeueEdge
	seen := map[int64]bool{}
	for _, e := range edges {
		if e.State < 0 { // purged: only a settled edge outlives its upstream row
			if e.Outcome != UpstreamSucceeded {
				return nil, false, fmt.Errorf("%w: task %d runs after task %d, which no longer exists (purged)", ErrDependency, old, e.Upstream)
			}
			if !seen[e.Upstream] {
				seen[e.Upstream] = true
				out = append(out, requeueEdge{e.Upstream, UpstreamSucceeded})
			}
			continue
		}
		u, err := s.newestRequeue(ctx, tx, e.Upstream)
		if err != nil {
			return nil, false, err
		}
		if !seen[u] {
			seen[u] = true
			ups = append(ups, u)
		}
	}
	states := map[int64]State{}
	if len(ups) > 0 {
		var rows []struct {
			ID    int64 `db:"id"`
			State State `db:"task_status"`
		}
		if err := tx.SelectContext(ctx, &rows, s.sql.DepUpstreamStates(len(ups)), anySlice(ups)...); err != nil {
			return nil, false, err
		}
		for _, r := range rows {
			states[r.ID] = r.State
		}
	}
	blocked := false
	for _, u := range ups {
		st, ok := states[u]
		switch {
		case !ok:
			return nil, false, fmt.Errorf("%w: task %d runs after task %d, which no longer exists (purged)", ErrDependency, old, u)
		case st == StateDead || st == StateDiscarded || st == StateSkipped:
			return nil, false, fmt.Errorf("%w: task %d runs after task %d, which is %s and will never succeed: requeue task %d first (a skipped task: requeue the failed task it waits on), then requeue task %d", ErrDependency, old, u, st, u, old)
		}
		outcome := upstreamOutcome(st)
		if outcome != UpstreamSucceeded {
			blocked = true
		}
		out = append(out, requeueEdge{u, outcome})
	}
	return out, blocked, nil
}

// newestRequeue follows task id's requeued_to links to the newest task it
// was requeued into (id itself if it was never requeued).
func (s *Store) newestRequeue(ctx context.Context, tx *sqlx.Tx, id int64) (int64, error) {
	for range maxRequeueHops {
		var row struct {
			From sql.NullInt64 `db:"requeued_from"`
			To   sql.NullInt64 `db:"requeued_to"`
		}
		err := tx.GetContext(ctx, &row, s.sql.RequeueLinks, id)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && !row.To.Valid) {
			return id, nil
		}
		if err != nil {
			return 0, err
		}
		id = row.To.Int64
	}
	return 0, fmt.Errorf("%w: task %d was requeued more than %d times", ErrDependency, id, maxRequeueHops)
}

// insertRequeueEdges writes the edges of task fresh (requeueDependencies).
func (s *Store) insertRequeueEdges(ctx context.Context, tx *sqlx.Tx, fresh int64, edges []requeueEdge, now Millis) error {
	if len(edges) == 0 {
		return nil
	}
	args := make([]any, 0, 4*len(edges))
	var unsettled []int64
	for _, e := range edges {
		args = append(args, fresh, e.upstream, e.outcome, now)
		if e.outcome != UpstreamSucceeded {
			unsettled = append(unsettled, e.upstream)
		}
	}
	if _, err := tx.ExecContext(ctx, s.sql.InsertDeps(len(edges)), args...); err != nil {
		return err
	}
	// Their finishes must settle the new edges (finish_downstream.go).
	return s.markDownstream(ctx, tx, unsettled)
}
