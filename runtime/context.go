package runtime

import (
	"context"
	"fmt"
)

type attemptKey struct{}

// attemptInfo is what an attempt's context carries (one allocation per
// attempt, its progress box included).
type attemptInfo struct {
	taskID  int64
	attempt int
	name    string
	// progress is the attempt's reports (progress.go); a fallback's has no
	// runtime (rt nil) and ReportProgress refuses it.
	progress progressBox
}

func withAttempt(ctx context.Context, id int64, attempt int, name string) context.Context {
	return context.WithValue(ctx, attemptKey{}, &attemptInfo{taskID: id, attempt: attempt, name: name})
}

// AttemptFrom returns the task id and the 1-based attempt number of the
// attempt running with ctx; ok is false outside an attempt.
func AttemptFrom(ctx context.Context) (taskID int64, attempt int, ok bool) {
	a, ok := ctx.Value(attemptKey{}).(*attemptInfo)
	if !ok {
		return 0, 0, false
	}
	return a.taskID, a.attempt, true
}

// IdempotencyKey returns "argo-<task id>-<attempt>", unique per task and
// attempt for ever (a requeue is a new task: TaskKey says why) and stable if
// the same attempt is replayed: pass it to the callee so that it can drop a
// duplicate. It is "" outside an attempt.
func IdempotencyKey(ctx context.Context) string {
	a, ok := ctx.Value(attemptKey{}).(*attemptInfo)
	if !ok {
		return ""
	}
	return fmt.Sprintf("argo-%d-%d", a.taskID, a.attempt)
}
