package storagetest

import (
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// A group's retry budget (half of its first attempts per minute, one retry
// a window without any): with only retries due, a window starts one; first
// attempts earn room for half as many retries, taken in the same claim;
// retries over the budget stay due with their attempts unused, and a new
// window starts one more.
func flowRetryBudget(t *testing.T, e Engine) {
	s := e.Open(t)
	p := storage.FlowPolicy{RetryBudget: &storage.RetryBudgetPolicy{Share: 0.5, WindowMs: 60_000, MinRetries: 1}}
	names := []string{"print"}
	var retries []*storage.Task
	for i := 0; i < 6; i++ {
		task := newTask("print", retrying, 1, i%4)
		task.ExecuteTimes = 1
		insert(t, s, task)
		retries = append(retries, task)
	}
	took := func(r storage.FlowClaimResult) (firsts, again int) {
		for _, c := range r.Tasks {
			if c.ExecuteTimes == 1 {
				firsts++
			} else {
				again++
			}
		}
		return firsts, again
	}
	if f, r := took(flowClaim(t, s, "printer", names, p, "a", 10, 100)); f != 0 || r != 1 {
		t.Fatalf("only retries due: took %d first attempts and %d retries, want 0 and 1 (the window's minimum)", f, r)
	}
	if f, r := took(flowClaim(t, s, "printer", names, p, "b", 20, 100)); f != 0 || r != 0 {
		t.Fatalf("budget spent: took %d first attempts and %d retries, want none", f, r)
	}
	pendingTasks(t, s, "print", 4, 1)
	if f, r := took(flowClaim(t, s, "printer", names, p, "a", 30, 100)); f != 4 || r != 2 {
		t.Fatalf("4 first attempts due: took %d first attempts and %d retries, want 4 and 2 (half of 4, plus the minimum, less the one already out)", f, r)
	}
	if f, r := took(flowClaim(t, s, "printer", names, p, "b", 40, 100)); f != 0 || r != 0 {
		t.Fatalf("budget spent again: took %d first attempts and %d retries, want none", f, r)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task WHERE task_status = ? AND execute_times = 1", retrying); n != 3 {
		t.Fatalf("%d retries wait with their attempts unused, want 3", n)
	}
	if f, r := took(flowClaim(t, s, "printer", names, p, "a", 60_030, 100)); f != 0 || r != 1 {
		t.Fatalf("next window: took %d first attempts and %d retries, want 0 and 1", f, r)
	}
	// Without a budget, the remaining retries all start.
	if f, r := took(flowClaim(t, s, "printer", names, storage.FlowPolicy{}, "a", 60_040, 100)); f != 0 || r != 2 {
		t.Fatalf("no budget: took %d first attempts and %d retries, want 0 and 2", f, r)
	}
}
