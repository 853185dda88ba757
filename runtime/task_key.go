package runtime

import (
	"context"
	"fmt"
)

// TaskKey returns "argo-<task id>", the same for every attempt of a task:
// pass it to a callee that drops duplicate calls as a whole (rather than
// duplicate attempts, IdempotencyKey), so that a retry after an attempt
// whose answer was lost is recognised. It is "" outside an attempt.
//
// Both keys are unique for ever: task ids are never reused (SQLite's
// AUTOINCREMENT; InnoDB's counter, persisted on MariaDB 10.2+ and MySQL
// 8.0+), and a requeue is a new task with a new id (Inspector.RequeueAsNew),
// so a requeued call carries keys its callee has not seen.
func TaskKey(ctx context.Context) string {
	a, ok := ctx.Value(attemptKey{}).(*attemptInfo)
	if !ok {
		return ""
	}
	return fmt.Sprintf("argo-%d", a.taskID)
}
