package storagetest

import (
	"errors"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// flowBudgetGiveBackCases: a first attempt given back unrun is counted
// once by its group's retry budget (Store.GiveBackFirst).
func flowBudgetGiveBackCases() []testCase {
	return []testCase{
		{"GiveBackTakesAFirstAttemptOutOfTheBudget", flowBudgetGiveBack},
	}
}

// A first attempt claimed and given back leaves the budget's count as it
// was before its claim, in the window it was counted in; given back after
// the window restarted (it was counted in the old one), the new window's
// count is left alone; a give-back whose lease is gone writes nothing.
func flowBudgetGiveBack(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	p := storage.FlowPolicy{RetryBudget: &storage.RetryBudgetPolicy{Share: 0.5, WindowMs: 60_000, MinRetries: 1}}
	names := []string{"print"}
	budget := func() (firsts, retries int) {
		t.Helper()
		if err := s.DB().QueryRow("SELECT budget_firsts, budget_retries FROM argo_flow WHERE group_name = ?", "printer").Scan(&firsts, &retries); err != nil {
			t.Fatal(err)
		}
		return firsts, retries
	}
	giveBack := func(c *storage.Task, now Millis) error {
		return s.GiveBackFirst(ctx, storage.Finishing{Fence: fenceOf(c), To: pending, Due: now, UndoAttempt: true}, "printer", c.GmtModified, now)
	}
	pendingTasks(t, s, "print", 2, 1)
	r := flowClaim(t, s, "printer", names, p, "a", 1_000, 2)
	if len(r.Tasks) != 2 {
		t.Fatalf("took %d first attempts, want 2", len(r.Tasks))
	}
	if f, _ := budget(); f != 2 {
		t.Fatalf("the budget counts %d first attempts, want 2", f)
	}
	if err := giveBack(r.Tasks[0], 1_500); err != nil {
		t.Fatal(err)
	}
	if f, _ := budget(); f != 1 {
		t.Fatalf("after one give-back the budget counts %d first attempts, want 1", f)
	}
	if got := get(t, s, r.Tasks[0].ID); got.State != pending || got.ExecuteTimes != 0 || got.LeaseOwner != "" {
		t.Fatalf("given back: %s at attempt %d owned by %q, want pending at 0, unowned", got.State, got.ExecuteTimes, got.LeaseOwner)
	}
	// Given back again after its lease was lost: nothing changes.
	if err := giveBack(r.Tasks[0], 1_600); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("second give-back of one claim: %v, want ErrLeaseLost", err)
	}
	if f, _ := budget(); f != 1 {
		t.Fatalf("after a refused give-back the budget counts %d first attempts, want 1", f)
	}
	// The next window: the given-back task is claimed and counted there;
	// the other, claimed in the old window, is given back in the new one.
	r2 := flowClaim(t, s, "printer", names, p, "b", 70_000, 2)
	if len(r2.Tasks) != 1 || r2.Tasks[0].ID != r.Tasks[0].ID {
		t.Fatalf("next window took %v, want the given-back task %d", idsOf(r2.Tasks), r.Tasks[0].ID)
	}
	if err := giveBack(r.Tasks[1], 70_500); err != nil {
		t.Fatal(err)
	}
	if f, _ := budget(); f != 1 {
		t.Fatalf("a give-back of a claim of the old window changed the new one's count to %d first attempts, want 1", f)
	}
}
