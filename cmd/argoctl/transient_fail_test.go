package main

import (
	"context"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/runtime"
)

// TestTransientFailCommand (seed 001's run?transient_fail=true):
// transient-fail records a request per task in the trail (reason
// required), refuses a task with no attempt to come, and says which
// instances act on it.
func TestTransientFailCommand(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			failCtl(t, b.DSN, 2, "transient-fail needs -reason", "transient-fail", "2")
			failCtl(t, b.DSN, 1, "task 6 is recovered", "transient-fail", "6", "-reason", "x")
			out := mustCtl(t, b.DSN, "transient-fail", "2", "4", "-reason", "drill", "-operator", "alice")
			want := "next attempt fails as transient: task 2 (on instances started with Config.FaultInjection)\n" +
				"next attempt fails as transient: task 4 (on instances started with Config.FaultInjection)\n"
			if out != want {
				t.Fatalf("transient-fail 2 4: %q, want %q", out, want)
			}
			db, dialect := openDB(t, b.DSN)
			in := runtime.NewInspector(db, dialect)
			for _, id := range []int64{2, 4} {
				tr, err := in.Trail(context.Background(), id)
				if err != nil || len(tr) != 1 || tr[0].Action != runtime.ActionTransientFail || tr[0].Operator != "alice" || tr[0].Reason != "drill" {
					t.Fatalf("trail of %d: %+v, %v", id, tr, err)
				}
				if task := getTask(t, b.DSN, id); task.State == runtime.StateDead {
					t.Fatalf("transient-fail changed task %d's row", id)
				}
			}
		})
	}
}
