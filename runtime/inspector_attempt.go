package runtime

import (
	"context"
	"errors"
	"fmt"
)

// AttemptKindAttempt and AttemptKindFallback are the kinds of the records
// of a task's history (Attempt.Kind): a call of the function, and the run of
// its fallback.
const (
	AttemptKindAttempt  = "attempt"
	AttemptKindFallback = "fallback"
)

// ErrNoAttempt is returned by Inspector.Attempt for an attempt number the
// task has not reached (or one below 1: attempts count from 1).
var ErrNoAttempt = errors.New("no such attempt")

// Attempt returns attempt n (counted from 1, as Task.ExecuteTimes) of task
// id: seed 000's findByWorkflowIdAndAttempt(id, n). A finished attempt is
// its record in the history, with its outcome, error, worker, times and the
// backoff chosen after it; the attempt running now is returned with an empty
// Outcome and a zero FinishedAt, its worker the lease owner and its start
// the claim's time, and its latest progress written (docs/progress.md).
// Before migration 000005 an in-place requeue restarted the count: of two
// records with the same number, the later one is returned. A task that does
// not exist gives ErrNotFound; a number it has not reached, ErrNoAttempt.
// It reads the task row and its history (two queries).
func (in *Inspector) Attempt(ctx context.Context, id int64, n int) (Attempt, error) {
	t, err := in.store.Get(ctx, id)
	if err != nil {
		return Attempt{}, err
	}
	if n < 1 {
		return Attempt{}, fmt.Errorf("argo: task %d: %w: attempts count from 1, not %d", id, ErrNoAttempt, n)
	}
	if t.State == StateRunning && t.ExecuteTimes == n {
		// The claim (or the submit that wrote the row leased) set gmt_modified;
		// lease renewals leave it.
		a := Attempt{TaskPK: id, Attempt: n, Kind: AttemptKindAttempt, Worker: t.LeaseOwner, StartedAt: t.GmtModified}
		if t.ProgressAttempt == n { // its latest progress a renewal wrote
			a.Progress, a.ProgressNote, a.ProgressAt = t.Progress, t.ProgressNote, t.ProgressAt
		}
		return a, nil
	}
	atts, err := in.store.Attempts(ctx, id)
	if err != nil {
		return Attempt{}, err
	}
	for i := len(atts) - 1; i >= 0; i-- {
		if a := atts[i]; a.Kind == AttemptKindAttempt && a.Attempt == n {
			return a, nil
		}
	}
	return Attempt{}, fmt.Errorf("argo: task %d has no attempt %d (%w): it has run %d", id, n, ErrNoAttempt, t.ExecuteTimes)
}
