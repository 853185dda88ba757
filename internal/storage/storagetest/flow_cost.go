package storagetest

import (
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// A gated claim that takes nothing and changes nothing (its group at its
// cap) does not write the group's row: lock_seq stays as the last claim that took left it, and
// the claim that takes the freed slot writes it again.
func flowFullClaimWritesNothing(t *testing.T, e Engine) {
	s := e.Open(t)
	pendingTasks(t, s, "print", 3, 1)
	p := storage.FlowPolicy{Limit: 1}
	names := []string{"print"}
	seq := func() int {
		return count(t, s, "SELECT lock_seq FROM argo_flow WHERE group_name = 'printer'")
	}
	first := flowClaim(t, s, "printer", names, p, "a", 10, 100).Tasks
	if len(first) != 1 {
		t.Fatalf("first claim took %d, want 1 (cap 1)", len(first))
	}
	took := seq()
	for i := 0; i < 3; i++ {
		if r := flowClaim(t, s, "printer", names, p, "b", Millis(20+i), 100); len(r.Tasks) != 0 {
			t.Fatalf("claim of a full group took %d", len(r.Tasks))
		}
	}
	if got := seq(); got != took {
		t.Fatalf("claims that took nothing moved lock_seq from %d to %d: they wrote the group's row", took, got)
	}
	if err := s.Finish(ctxFor(t), success(first[0]), 30); err != nil {
		t.Fatal(err)
	}
	if r := flowClaim(t, s, "printer", names, p, "b", 40, 100); len(r.Tasks) != 1 {
		t.Fatalf("claim after the finish took %d, want 1", len(r.Tasks))
	}
	if got := seq(); got != took+1 {
		t.Fatalf("the claim that took moved lock_seq from %d to %d, want +1", took, got)
	}
}
