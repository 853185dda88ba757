package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/argo-retry/argo/runtime"
)

// showAttempt prints attempt n of task id (show ID -attempt N): seed 000's
// findByWorkflowIdAndAttempt(id, n), through Inspector.Attempt.
func showAttempt(e *env, id int64, n int) error {
	return withDB(e, func(ctx context.Context, in *runtime.Inspector) error {
		t, err := in.Get(ctx, id)
		if err != nil {
			return taskErr(id, err)
		}
		a, err := in.Attempt(ctx, id, n)
		if errors.Is(err, runtime.ErrNoAttempt) {
			return fmt.Errorf("task %d has no attempt %d: it has run %d (argoctl show %d lists them)", id, n, t.ExecuteTimes, id)
		}
		if err != nil {
			return taskErr(id, err)
		}
		if e.json() {
			return writeJSON(e.stdout, struct {
				TaskID int64 `json:"task_id"`
				attemptJSON
			}{id, toAttemptJSON(a)})
		}
		w := newTable(e.stdout)
		row(w, "task:", fmt.Sprintf("%d (%s)", id, t.Name))
		row(w, "attempt:", fmt.Sprintf("%d of %s", n, attempts(t)))
		outcome, finished, took := a.Outcome, fmtMillis(a.FinishedAt), fmtDuration(a.FinishedAt.Time().Sub(a.StartedAt.Time()))
		if outcome == "" {
			outcome, finished, took = "running", "-", "-"
		}
		row(w, "outcome:", outcome)
		row(w, "started:", fmtMillis(a.StartedAt))
		row(w, "finished:", finished)
		row(w, "duration:", took)
		if a.BackoffMs > 0 {
			row(w, "backoff:", fmtDuration(msDuration(a.BackoffMs)))
		}
		row(w, "worker:", a.Worker)
		if a.Outcome != "" && a.From != runtime.StateUnrecorded {
			row(w, "move:", fmtMove(runtime.Transition{From: a.From, To: a.To})) // show_transitions.go
		}
		if a.TraceID != "" {
			row(w, "trace id:", a.TraceID)
		}
		if a.ErrorCode != "" {
			row(w, "error code:", a.ErrorCode)
		}
		if a.ProgressAt != 0 {
			row(w, "progress:", progressCell(a.Progress, a.ProgressNote, 200)+" (reported "+fmtMillis(a.ProgressAt)+")")
		}
		w.Flush()
		if a.Error != "" {
			fmt.Fprintln(e.stdout, "error:")
			for _, line := range strings.Split(strings.TrimRight(a.Error, "\n"), "\n") {
				fmt.Fprintf(e.stdout, "  %s\n", line)
			}
		}
		return nil
	})
}
