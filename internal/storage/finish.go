package storage

import "context"

// FinishAsIs applies f if the lease still holds, and records its attempt row in
// the same transaction (one round trip on MySQL with the onetrip pool). It
// returns ErrLeaseLost if the lease was taken over, and then writes nothing.
// (finish adds the degrade of a write refused for its data.)
func (s *Store) FinishAsIs(ctx context.Context, f Finishing, now Millis) error {
	if err := checkTransition(f.ID, f.From, f.To); err != nil {
		return err
	}
	// A finish that settles downstream tasks (dependencies.go) needs a
	// transaction: the batch path. One of a task without downstream tasks
	// (finish_downstream.go) is its one UPDATE, fenced on has_downstream = 0
	// too: when that changes nothing, the lease is gone or a task was
	// submitted to run after this one since its row was read, and the
	// batch path, with the dependency statements, decides which.
	if f.HistoryRow() == nil && FinishSteps(s.sql, f, now) == nil {
		q, args := FinishStatement(s.sql, f, now)
		n, err := s.exec(ctx, q, args...)
		if err != nil || n > 0 {
			return err
		}
		if !f.SkipsDependencies() {
			return ErrLeaseLost
		}
		f.Downstream = true
	}
	errs, err := s.FinishBatchAsIs(ctx, []Finishing{f}, now)
	if err != nil {
		return err
	}
	return errs[0]
}
