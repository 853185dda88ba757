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

// Claims whose times arrive out of order (a claim's time is read before it
// waits for the group's row, so a later claim can carry an earlier time):
// every first attempt and retry is counted once in the one window, none is
// dropped by a restart of the window. Claims at 100 s and then at 99.995 s
// take 4 first attempts each; the 8 earn 0.5 × 8 + 1 = 5 retries, not the
// 0.5 × 4 + 1 = 3 a window restarted at 99.995 s would allow.
func flowRetryBudgetClaimsOutOfOrder(t *testing.T, e Engine) {
	s := e.Open(t)
	p := storage.FlowPolicy{RetryBudget: &storage.RetryBudgetPolicy{Share: 0.5, WindowMs: 60_000, MinRetries: 1}}
	names := []string{"print"}
	pendingTasks(t, s, "print", 8, 1)
	for _, now := range []Millis{100_000, 99_995} {
		if r := flowClaim(t, s, "printer", names, p, "a", now, 4); len(r.Tasks) != 4 {
			t.Fatalf("claim at %d took %d first attempts, want 4", now, len(r.Tasks))
		}
	}
	for i := 0; i < 8; i++ {
		task := newTask("print", retrying, 1, i%4)
		task.ExecuteTimes = 1
		insert(t, s, task)
	}
	if r := flowClaim(t, s, "printer", names, p, "b", 99_997, 100); len(r.Tasks) != 5 {
		t.Fatalf("8 first attempts in the window: took %d retries, want 5 (half of 8, plus the minimum)", len(r.Tasks))
	}
	groups, err := s.FlowGroups(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 || groups[0].BudgetFirsts != 8 || groups[0].BudgetRetries != 5 || groups[0].BudgetStart != 100_000 {
		t.Fatalf("group rows %+v, want one with the window started at 100 s, 8 first attempts and 5 retries", groups)
	}
	// A window start more than a window ahead of the claim (written by a
	// clock that was wrong) restarts the window at the claim's time: the
	// group is not left without retries until that clock's time comes.
	exec(t, s, "UPDATE argo_flow SET budget_start = ? WHERE group_name = 'printer'", 10_000_000)
	if r := flowClaim(t, s, "printer", names, p, "b", 100_100, 100); len(r.Tasks) != 1 {
		t.Fatalf("after a window start far ahead: took %d retries, want 1 (a new window's minimum)", len(r.Tasks))
	}
	if n := count(t, s, "SELECT budget_start FROM argo_flow WHERE group_name = 'printer'"); n != 100_100 {
		t.Fatalf("window start %d after the claim at 100.1 s, want 100100", n)
	}
}
