package storagetest

import (
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// finishDeferredCases: an attempt deferred by its callee (RetryAfter).
func finishDeferredCases() []testCase {
	return []testCase{
		{"DeferredAttemptKeepsItsNumber", finishDeferred},
	}
}

// A deferred attempt's finish (alone, and in a batch with another) keeps
// its attempt number, counts it in deferred_times and writes its history
// row deferred; the next claim takes the next number. FinishLanded finds
// it by that row.
func finishDeferred(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	a := newTask("defer", pending, 1, 0)
	b := newTask("defer", pending, 1, 1)
	insert(t, s, a)
	insert(t, s, b)
	deferred := func(c *storage.Task, now Millis) storage.Finishing {
		return storage.Finishing{Fence: fenceOf(c), To: retrying, Due: now + 5, Deferred: true,
			History: &storage.Attempt{TaskPK: c.ID, Attempt: c.ExecuteTimes, Kind: "attempt", Worker: "me", StartedAt: now - 1, FinishedAt: now, Outcome: storage.OutcomeDeferred, Error: "429", BackoffMs: 5}}
	}
	ca := claimByID(t, s, a.ID, "me", 10, 1000)
	if err := s.Finish(ctx, deferred(ca, 12), 12); err != nil {
		t.Fatal(err)
	}
	if landed, err := s.FinishLanded(ctx, deferred(ca, 12)); err != nil || !landed {
		t.Fatalf("FinishLanded of a written deferral: %v, %v", landed, err)
	}
	ca, err := s.ClaimByID(ctx, a.ID, a.ShardKey, retrying, "me", 20, 1000)
	if err != nil || ca == nil {
		t.Fatalf("claim of the deferred task: %v, %v", ca, err)
	}
	cb := claimByID(t, s, b.ID, "me", 20, 1000)
	if ca.ExecuteTimes != 2 || ca.DeferredTimes != 1 {
		t.Fatalf("claimed after a deferral: attempt %d with %d deferred, want 2 and 1", ca.ExecuteTimes, ca.DeferredTimes)
	}
	errs, err := s.FinishBatch(ctx, []storage.Finishing{deferred(ca, 22), deferred(cb, 22)}, 22)
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("batch of deferrals: %v, %v", errs, err)
	}
	for _, w := range []struct {
		id              int64
		attempt, defers int
	}{{a.ID, 2, 2}, {b.ID, 1, 1}} {
		row := get(t, s, w.id)
		if row.State != retrying || row.ExecuteTimes != w.attempt || row.DeferredTimes != w.defers || row.LeaseOwner != "" {
			t.Fatalf("task %d after its deferrals: %s at attempt %d with %d deferred, owner %q; want retrying at %d with %d, unowned", w.id, row.State, row.ExecuteTimes, row.DeferredTimes, row.LeaseOwner, w.attempt, w.defers)
		}
		atts := attempts(t, s, w.id)
		if len(atts) != w.defers {
			t.Fatalf("task %d: history %+v, want %d deferred rows", w.id, atts, w.defers)
		}
		for i, h := range atts {
			if h.Attempt != i+1 || h.Outcome != storage.OutcomeDeferred {
				t.Fatalf("task %d: history %+v, want attempts 1..%d deferred", w.id, atts, w.defers)
			}
		}
	}
}
