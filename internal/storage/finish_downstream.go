package storage

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// A finish pays for dependencies only when the task has downstream tasks
// (issue #23; migration 000017, docs/dependencies.md).
//
// argo_task.has_downstream is set to 1, and never cleared, in the
// transaction that writes an edge naming the row as its upstream task: a
// submit with After (InsertDependent), a requeue's new edges
// (insertRequeueEdges) and an edge moved to a requeued task (repointEdges).
// The row as claimed carries it (Task.HasDownstream, into Fence.Downstream).
// A finish that ends a task read without it runs no dependency statement,
// and its fenced UPDATE (and the attempt row's INSERT … SELECT on MySQL's
// one-trip path) also requires has_downstream = 0 (NoDownstreamGuard), so
// an edge added after the claim fails the fence: the finish is then run
// again with its dependency statements (Downstream set), whose own fence
// says whether the lease still holds. The edge's transaction writes the
// upstream row; the finish's UPDATE reads that row locked, as committed:
// on one server it waits for the submit and sees the flag, on Galera the
// two writes of the row conflict at certification.

// NoDownstreamGuard is appended to the WHERE of a finish that skips the
// dependency statements (Finishing.SkipsDependencies).
const NoDownstreamGuard = " AND has_downstream = 0"

// SkipsDependencies reports whether f runs no dependency statement: it
// ends the task in a state that settles edges, and the row had no
// downstream task when read. Its statements then carry NoDownstreamGuard.
func (f Finishing) SkipsDependencies() bool {
	return !f.Downstream && upstreamOutcome(f.To) != UpstreamUnfinished
}

// FinishSteps are the dependency statements of finish f, to run after its
// UPDATE in its transaction: DependencySteps, or none when f skips them
// (SkipsDependencies) or settles nothing.
func FinishSteps(st *Statements, f Finishing, now Millis) []Step {
	if !f.Downstream {
		return nil
	}
	return DependencySteps(st, f.ID, f.To, now)
}

// execFinish runs f's fenced UPDATE through tx and returns the rows it changed.
func (s *Store) execFinish(ctx context.Context, tx *sqlx.Tx, f Finishing, now Millis) (int64, error) {
	q, args := FinishStatement(s.sql, f, now)
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// markDownstream sets has_downstream on the tasks ids, in the transaction
// tx that writes edges naming them as upstream tasks.
func (s *Store) markDownstream(ctx context.Context, tx *sqlx.Tx, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	q := "UPDATE argo_task SET has_downstream = 1 WHERE has_downstream = 0 AND id IN " + Placeholders(len(ids))
	if _, err := tx.ExecContext(ctx, q, anySlice(ids)...); err != nil {
		return fmt.Errorf("argo: marking the upstream tasks %v: %w", ids, err)
	}
	return nil
}

// repointEdges moves the edges of the tasks ids from upstream task old to
// task fresh, unsettled (Statements.DepRepoint), and marks fresh.
func (s *Store) repointEdges(ctx context.Context, tx *sqlx.Tx, fresh, old int64, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	res, err := tx.ExecContext(ctx, s.sql.DepRepoint(len(ids)), append([]any{fresh, old}, anySlice(ids)...)...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	return s.markDownstream(ctx, tx, []int64{fresh})
}

// finishAgainWithDependencies runs again, each on its own with its
// dependency statements, the finishes of fs that skipped them and whose
// fence failed (errs[i] ErrLeaseLost; a one-trip batch cannot branch
// mid-query): the lease is gone, or an edge was added since the row was
// read. Each one's own outcome replaces errs[i].
func (s *Store) finishAgainWithDependencies(ctx context.Context, fs []Finishing, errs []error, now Millis) {
	for i, f := range fs {
		if errs[i] == ErrLeaseLost && f.SkipsDependencies() {
			f.Downstream = true
			errs[i] = s.Finish(ctx, f, now)
		}
	}
}
