// Package chaos proves the runtime under kill -9: chaos_test.go builds the
// worker program in ./chaosworker, runs several copies of it on one MariaDB
// database, SIGKILLs and restarts them while they work through a backlog,
// and then checks from the database and the workers' fsynced attempt logs
// that every task succeeded, none was lost, and no (task, attempt) ran twice.
// galera_test.go does the same on a 3-node Galera cluster, one worker per
// node, killing a node as well as a worker, with the workers submitting the
// tasks themselves as a service's callers would.
//
// This file holds what the worker and the test share.
package chaos

import (
	"time"

	"github.com/argo-retry/argo/runtime"
)

// TaskName is the one task the workers run.
const TaskName = "chaos.work"

// Args are a task's arguments.
type Args struct {
	N int `json:"n"`
}

// Failures is how many first attempts of task n fail transiently: a third of
// the tasks fail once or twice.
func Failures(n int) int {
	if n%3 != 0 {
		return 0
	}
	return 1 + (n/3)%2
}

// Def is the task as submitted (the workers add Run): quick fixed retries,
// and enough attempts that rescues after kills never exhaust one.
func Def() *runtime.TaskDef {
	return &runtime.TaskDef{
		Name:   TaskName,
		Policy: runtime.RetryPolicy{MaxAttempts: 50, Backoff: runtime.BackoffFixed, Initial: 20 * time.Millisecond, Jitter: runtime.Jitter{Kind: runtime.JitterNone}},
	}
}
