package main

import (
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/runtime"
)

// TestCancel: cancel by id ends a running task (saying which attempt its
// instance stops) and a retrying one, refuses a finished one and a missing
// reason; by filter it cancels what matches, at most -limit, and refuses no
// filter without --all; the trail says who and why.
func TestCancel(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			failCtl(t, b.DSN, 2, "cancel needs -reason", "cancel", "8")
			failCtl(t, b.DSN, 2, "this would cancel every task", "cancel", "-reason", "x")
			failCtl(t, b.DSN, 2, "not both", "cancel", "8", "-name", "labels.Print", "-reason", "x")
			out := mustCtl(t, b.DSN, "cancel", "8", "2", "-reason", "printer retired", "-operator", "alice")
			if out != "cancelled: task 8 (attempt 1 was running on host-a-1234: it stops at that instance's next heartbeat)\ncancelled: task 2\n" {
				t.Fatalf("cancel 8 2: %q", out)
			}
			for _, id := range []int64{8, 2} {
				if task := getTask(t, b.DSN, id); task.State != runtime.StateDiscarded || task.DiscardReason != "cancelled: printer retired" {
					t.Fatalf("task %d after cancel: %s %q", id, task.State, task.DiscardReason)
				}
			}
			show := mustCtl(t, b.DSN, "show", "8")
			for _, want := range []string{"cancel", "alice", "printer retired", runtime.OutcomeCancelled} {
				if !strings.Contains(show, want) {
					t.Fatalf("show 8 lacks %q:\n%s", want, show)
				}
			}
			failCtl(t, b.DSN, 1, "already finished", "cancel", "1", "-reason", "x")
			if out := mustCtl(t, b.DSN, "cancel", "-name", "CallTruck", "-reason", "x", "--dry-run"); out != "would cancel 1 task (dry run: nothing changed)\n" {
				t.Fatalf("dry run: %q", out)
			}
			if out := mustCtl(t, b.DSN, "cancel", "-name", "CallTruck", "-reason", "truck line closed", "-limit", "1"); out != "cancelled 1 task (the -limit: run again for more)\n" {
				t.Fatalf("cancel by filter: %q", out)
			}
			if getTask(t, b.DSN, 4).State != runtime.StateDiscarded {
				t.Fatal("task 4 not cancelled by the filter")
			}
			failCtl(t, b.DSN, 1, "no flow group", "cancel", "-group", "nope", "-reason", "x")
		})
	}
}
