package storagetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// transientFailCases: transient-fail requests (seed 001's
// run?transient_fail=true) and their consumption by injected failures.
func transientFailCases() []testCase {
	return []testCase{
		{"RequestsAndConsumption", transientFailRequests},
	}
}

// Each request is recorded in the trail and counts as pending until an
// attempt of the same task fails with the injected-failure text; other
// failures and other tasks' requests do not count. Tasks with no attempt to
// come are refused.
func transientFailRequests(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	task, other := newTask("tf", pending, 0, 0), newTask("tf", pending, 0, 0)
	done := newTask("tf", succeeded, 0, 0)
	insert(t, s, task, other, done)
	pendingFor := func(id int64) int {
		t.Helper()
		n, err := s.TransientFailsPending(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := s.RequestTransientFail(ctx, task.ID, " ", "alice", 10); err == nil {
		t.Fatal("a transient-fail request without a reason was accepted")
	}
	if err := s.RequestTransientFail(ctx, done.ID, "drill", "alice", 10); err == nil || !strings.Contains(err.Error(), "succeeded") {
		t.Fatalf("request on a succeeded task: %v, want refused naming the state", err)
	}
	if err := s.RequestTransientFail(ctx, done.ID+1000, "drill", "alice", 10); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("request on a missing task: %v, want ErrNotFound", err)
	}
	for range 2 {
		if err := s.RequestTransientFail(ctx, task.ID, "drill", "alice", 10); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RequestTransientFail(ctx, other.ID, "drill", "bob", 10); err != nil {
		t.Fatal(err)
	}
	if n := pendingFor(task.ID); n != 2 {
		t.Fatalf("%d requests pending, want 2", n)
	}
	if got := actions(trail(t, s, task.ID)); len(got) != 2 || got[0] != storage.ActionTransientFail+" by alice" {
		t.Fatalf("trail %q", got)
	}
	c := claimByID(t, s, task.ID, "me", 20, 100_000)
	if err := s.Finish(ctx, failure(c, retrying, 30, storage.InjectedFailurePrefix+" by an operator's transient-fail"), 25); err != nil {
		t.Fatal(err)
	}
	if n := pendingFor(task.ID); n != 1 {
		t.Fatalf("after one injected failure %d requests pending, want 1", n)
	}
	c, err := s.ClaimByID(ctx, task.ID, task.ShardKey, retrying, "me", 40, 100_000)
	if err != nil || c == nil {
		t.Fatalf("second claim: %v, %v", c, err)
	}
	if err := s.Finish(ctx, failure(c, retrying, 60, "downstream down"), 45); err != nil {
		t.Fatal(err)
	}
	if n := pendingFor(task.ID); n != 1 {
		t.Fatalf("an ordinary failure consumed a request: %d pending, want 1", n)
	}
	if n := pendingFor(other.ID); n != 1 {
		t.Fatalf("the other task has %d pending, want its own 1", n)
	}
}
