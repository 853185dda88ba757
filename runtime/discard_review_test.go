package runtime

import (
	"context"
	"errors"
	"testing"
)

// A discard needs two people by default (seed 001): an Inspector's
// Discard and DiscardWhere refuse with ErrDiscardNeedsApproval and change
// nothing; RequestDiscard and another operator's ApproveDiscard discard
// the task, the trail holding the request and the approval;
// SingleOperatorDiscard lets one operator discard, the trail holding a
// discard (no request, no approval).
func TestDiscardNeedsTwoPeopleByDefault(t *testing.T) {
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	forEachBackend(t, func(t *testing.T, dsn string) {
		s := openTestStore(t, dsn)
		ctx := context.Background()
		a, b := sampleTask("review.a", StatePending, 1, 0), sampleTask("review.b", StatePending, 1, 0)
		mustInsert(t, s, a)
		mustInsert(t, s, b)
		alice := &Inspector{store: s, Operator: "alice", SameAccountApproval: true}
		if err := alice.Discard(ctx, a.ID, "not needed"); !errors.Is(err, ErrDiscardNeedsApproval) {
			t.Fatalf("Discard with the defaults: %v, want ErrDiscardNeedsApproval", err)
		}
		if n, err := alice.DiscardWhere(ctx, Filter{}, "not needed", false); n != 0 || !errors.Is(err, ErrDiscardNeedsApproval) {
			t.Fatalf("DiscardWhere with the defaults: %d, %v; want 0, ErrDiscardNeedsApproval", n, err)
		}
		if got, _ := s.Get(ctx, a.ID); got.State != StatePending {
			t.Fatalf("a refused discard left task %d %s", a.ID, got.State)
		}
		if _, err := alice.RequestDiscard(ctx, a.ID, "not needed"); err != nil {
			t.Fatal(err)
		}
		bob := &Inspector{store: s, Operator: "bob", SameAccountApproval: true}
		if err := bob.ApproveDiscard(ctx, a.ID, "agreed"); err != nil {
			t.Fatal(err)
		}
		trail := func(id int64) (actions []string) {
			recs, err := alice.Trail(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				actions = append(actions, r.Action+" "+r.Operator)
			}
			return actions
		}
		if got, _ := s.Get(ctx, a.ID); got.State != StateDiscarded {
			t.Fatalf("approved discard left task %d %s", a.ID, got.State)
		}
		if got := trail(a.ID); len(got) != 2 || got[0] != ActionDiscardRequest+" alice" || got[1] != ActionDiscardApprove+" bob" {
			t.Fatalf("trail of the reviewed discard: %q", got)
		}
		alone := &Inspector{store: s, Operator: "carol", SingleOperatorDiscard: true}
		if err := alone.Discard(ctx, b.ID, "alone"); err != nil {
			t.Fatal(err)
		}
		if got := trail(b.ID); len(got) != 1 || got[0] != ActionDiscard+" carol" {
			t.Fatalf("trail of the single-operator discard: %q", got)
		}
	})
}
