package storagetest

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
)

// cancelCases: an operator's cancel (docs/cancel.md) of a waiting task and
// of a running one, the renewal that tells the running instance, the race
// with a finish between the cancel's read and its UPDATE, and the
// dependents.
func cancelCases() []testCase {
	return []testCase{
		{"Waiting", cancelWaiting},
		{"RunningAndTheRenewal", cancelRunning},
		{"FinishBetweenReadAndUpdate", cancelRacedByFinish},
		{"ReclaimedBetweenReadAndUpdate", cancelRacedByReclaim},
		{"HeldRetryBetweenReadAndUpdate", cancelRacedByHeldRetry},
		{"Dependents", cancelDependents},
		{"RunningKeyedRefused", cancelRunningKeyed},
		{"ReachesTheInstanceAtItsHeartbeat", cancelSeqHeartbeat}, // cancel_seq.go
		{"KeepsTheAttemptsProgress", cancelKeepsProgress},        // cancel_seq.go
	}
}

// cancelled fails the test unless task id is discarded by a cancel with
// reason, its trail one cancel by who, and its history's cancelled rows
// (attempt, worker) are want.
func wantCancelled(t *testing.T, s *storage.Store, id int64, reason, who string, want ...storage.Attempt) {
	t.Helper()
	row := get(t, s, id)
	if row.State != discarded || row.DiscardReason != storage.CancelReasonPrefix+reason || row.LeaseOwner != "" || row.LeaseUntil != 0 {
		t.Fatalf("task %d after the cancel: %s %q owner %q until %d", id, row.State, row.DiscardReason, row.LeaseOwner, row.LeaseUntil)
	}
	tr, err := s.OperatorActions(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(tr); len(got) != 1 || got[0] != argotype.ActionCancel+" by "+who || tr[0].Reason != reason {
		t.Fatalf("trail %+v, want one cancel by %s", tr, who)
	}
	var got []storage.Attempt
	for _, a := range attempts(t, s, id) {
		if a.Outcome == argotype.OutcomeCancelled {
			got = append(got, storage.Attempt{Attempt: a.Attempt, Worker: a.Worker})
		}
	}
	if len(got) != len(want) || (len(want) == 1 && got[0] != want[0]) {
		t.Fatalf("cancelled attempts %+v, want %+v", got, want)
	}
}

// Pending, retrying (held or not), exhausted and blocked tasks end
// discarded, with no cancelled attempt; finished and falling-back ones are
// refused and left as they were; a reason is required.
func cancelWaiting(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	p := newTask("c", pending, 100, 0)
	r := leasedTask("c", retrying, 100, 0, "holder", 1, 5_000) // a held retry
	x := newTask("c", exhausted, 100, 0)
	fb := leasedTask("c", fallingBack, 100, 0, "w", 3, 5_000)
	done := newTask("c", succeeded, 100, 0)
	insert(t, s, p, r, x, fb, done)
	if _, err := s.Cancel(ctx, p.ID, " ", "op", 200); err == nil {
		t.Fatal("a cancel without a reason was accepted")
	}
	for _, task := range []*storage.Task{p, r, x} {
		c, err := s.Cancel(ctx, task.ID, "not needed", "op", 200)
		if err != nil || c.From != task.State || c.Attempt != 0 {
			t.Fatalf("Cancel(%s) = %+v, %v", task.State, c, err)
		}
		wantCancelled(t, s, task.ID, "not needed", "op")
	}
	for _, task := range []*storage.Task{fb, done} {
		before := get(t, s, task.ID)
		_, err := s.Cancel(ctx, task.ID, "x", "op", 200)
		if !errors.Is(err, argotype.ErrTransitionInvalid) {
			t.Fatalf("Cancel(%s) = %v, want ErrTransitionInvalid", task.State, err)
		}
		if row := get(t, s, task.ID); *row != *before {
			t.Fatalf("a refused cancel changed the %s task: %+v", task.State, row)
		}
	}
	if _, err := s.Cancel(ctx, done.ID, "x", "op", 200); !strings.Contains(err.Error(), "already finished") {
		t.Fatalf("Cancel(succeeded) = %v, want already finished", err)
	}
	if _, err := s.Cancel(ctx, 1<<40, "x", "op", 200); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Cancel(unknown) = %v, want ErrNotFound", err)
	}
}

// A running task ends discarded with its attempt recorded cancelled by its
// worker; that worker's renewal reports the lease lost to a cancel (and a
// lease lost otherwise as lost only), and its finish is refused.
func cancelRunning(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	a, b := newTask("a", pending, 100, 0), newTask("a", pending, 100, 0)
	insert(t, s, a, b)
	claimed := claimOnly(t, s, 200, a.ID, b.ID)
	ca := claimed[0]
	if ca.ID != a.ID {
		ca = claimed[1]
	}
	c, err := s.Cancel(ctx, a.ID, "stop it", "op", 300)
	if err != nil || c.From != running || c.Attempt != 1 || c.Worker != "w" {
		t.Fatalf("Cancel(running) = %+v, %v", c, err)
	}
	wantCancelled(t, s, a.ID, "stop it", "op", storage.Attempt{Attempt: 1, Worker: "w"})
	// b's lease taken by another instance: lost, not cancelled.
	if _, err := dbx(s).Exec("UPDATE argo_task SET lease_owner = 'thief' WHERE id = ?", b.ID); err != nil {
		t.Fatal(err)
	}
	keys := []storage.LeaseKey{{ID: a.ID, Attempt: 1}, {ID: b.ID, Attempt: 1}}
	lost, cancelled, err := s.RenewLeases(ctx, "w", keys, nil, 90_000, 400)
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) != 2 || len(cancelled) != 1 || cancelled[0] != keys[0] {
		t.Fatalf("renewal: lost %v, cancelled %v; want both lost, %v cancelled", lost, cancelled, keys[0])
	}
	if err := s.Finish(ctx, success(ca), 500); err == nil {
		t.Fatal("the cancelled attempt's finish was written")
	}
	if row := get(t, s, a.ID); row.State != discarded {
		t.Fatalf("after the refused finish: %s", row.State)
	}
}

// A running call with an order key is refused, changed in nothing: the
// discard would pass its key to the next call at commit while the attempt
// runs on until its instance learns of it. Its next call of the key stays
// behind it; waiting, the same call is cancelled.
func cancelRunningKeyed(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	first, next := newTask("a", pending, 100, 0), newTask("a", pending, 110, 0)
	first.OrderKey = sql.NullString{String: "k", Valid: true}
	next.OrderKey = first.OrderKey
	insert(t, s, first, next)
	claimOnly(t, s, 200, first.ID)
	_, err := s.Cancel(ctx, first.ID, "stop it", "op", 300)
	if !errors.Is(err, argotype.ErrTransitionInvalid) || !strings.Contains(err.Error(), "holds order key") {
		t.Fatalf("Cancel of a running keyed call: %v, want a refusal naming its order key", err)
	}
	if row := get(t, s, first.ID); row.State != running || row.LeaseOwner != "w" || row.DiscardReason != "" {
		t.Fatalf("after the refused cancel: %s owner %q reason %q; want running, unchanged", row.State, row.LeaseOwner, row.DiscardReason)
	}
	if tr, err := s.OperatorActions(ctx, first.ID); err != nil || len(tr) != 0 {
		t.Fatalf("trail after a refused cancel: %+v, %v", tr, err)
	}
	if got, err := s.ClaimDue(ctx, "w2", 400, 60_000, 10, []string{"a"}, nil); err != nil || len(got) != 0 {
		t.Fatalf("claim while the first call of the key runs: %d rows, %v; want none", len(got), err)
	}
	if c, err := s.Cancel(ctx, next.ID, "not this one", "op", 500); err != nil || c.From != pending {
		t.Fatalf("Cancel of the waiting call of the key: %+v, %v", c, err)
	}
}

// The attempt finishes after the cancel read the row and before its UPDATE:
// the finish stands, the cancel is answered already finished and writes
// nothing.
func cancelRacedByFinish(t *testing.T, e Engine) {
	s := e.Open(t)
	a := newTask("a", pending, 100, 0)
	insert(t, s, a)
	ca := claimOnly(t, s, 200, a.ID)[0]
	raced := false
	hook := func(ctx context.Context, try int, at storage.TxPoint) error {
		if !raced && at == storage.TryBegin {
			raced = true
			return s.Finish(context.Background(), success(ca), 250)
		}
		return nil
	}
	_, err := s.Cancel(storage.WithTxHook(ctxFor(t), hook), a.ID, "too late", "op", 300)
	if !errors.Is(err, argotype.ErrTransitionInvalid) || !strings.Contains(err.Error(), "already finished") {
		t.Fatalf("Cancel raced by the finish = %v, want already finished", err)
	}
	if row := get(t, s, a.ID); row.State != succeeded {
		t.Fatalf("the finish did not stand: %s", row.State)
	}
	if tr, _ := s.OperatorActions(context.Background(), a.ID); len(tr) != 0 {
		t.Fatalf("a refused cancel wrote the trail %+v", tr)
	}
}

// The attempt the cancel read fails and another instance claims the retry
// before the cancel's UPDATE: the cancel lands on the new attempt, and
// records that attempt (and its worker) cancelled, not the one it read.
func cancelRacedByReclaim(t *testing.T, e Engine) {
	s := e.Open(t)
	a := newTask("a", pending, 100, 0)
	insert(t, s, a)
	ca := claimOnly(t, s, 200, a.ID)[0]
	raced := false
	hook := func(ctx context.Context, try int, at storage.TxPoint) error {
		if !raced && at == storage.TryBegin {
			raced = true
			if err := s.Finish(context.Background(), failure(ca, retrying, 210, "flaky"), 210); err != nil {
				return err
			}
			got, err := s.ClaimDue(context.Background(), "w2", 220, 60_000, 10, []string{"a"}, nil)
			if err != nil || len(got) != 1 || got[0].ExecuteTimes != 2 {
				t.Errorf("reclaim: %d tasks, %v", len(got), err)
			}
		}
		return nil
	}
	c, err := s.Cancel(storage.WithTxHook(ctxFor(t), hook), a.ID, "stop", "op", 300)
	if err != nil || c.Attempt != 2 || c.Worker != "w2" {
		t.Fatalf("Cancel raced by a reclaim = %+v, %v; want attempt 2 on w2", c, err)
	}
	wantCancelled(t, s, a.ID, "stop", "op", storage.Attempt{Attempt: 2, Worker: "w2"})
}

// A cancelled task's dependents are skipped, as for a discard, whether it
// was running or blocked.
func cancelDependents(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	ids := submitGroup(t, s, group(100, []string{"a", "b", "c"}, map[int][]int{1: {0}, 2: {1}}), 100)
	claimOnly(t, s, 200, ids[0])
	if _, err := s.Cancel(ctx, ids[0], "not needed", "op", 300); err != nil {
		t.Fatal(err)
	}
	wantStates(t, s, "after the cancel of the running upstream", map[int64]storage.State{ids[0]: discarded, ids[1]: storage.StateSkipped, ids[2]: storage.StateSkipped})

	ids = submitGroup(t, s, group(100, []string{"a", "b", "c"}, map[int][]int{1: {0}, 2: {1}}), 100)
	if _, err := s.Cancel(ctx, ids[1], "not wanted", "op", 400); err != nil {
		t.Fatal(err)
	}
	wantStates(t, s, "after the cancel of the blocked task", map[int64]storage.State{ids[0]: pending, ids[1]: discarded, ids[2]: storage.StateSkipped})
}

// The attempt the cancel read fails before the cancel's UPDATE, its retry
// held by the same instance (same owner, same attempt number: only the
// state tells it apart): the cancel ends the held retry, and records no
// cancelled attempt, since attempt 1 is recorded failed already.
func cancelRacedByHeldRetry(t *testing.T, e Engine) {
	s := e.Open(t)
	a := newTask("a", pending, 100, 0)
	insert(t, s, a)
	ca := claimOnly(t, s, 200, a.ID)[0]
	raced := false
	hook := func(ctx context.Context, try int, at storage.TxPoint) error {
		if !raced && at == storage.TryBegin {
			raced = true
			f := failure(ca, retrying, 1_000, "flaky")
			f.HoldUntil = 2_000
			return s.Finish(context.Background(), f, 210)
		}
		return nil
	}
	c, err := s.Cancel(storage.WithTxHook(ctxFor(t), hook), a.ID, "stop", "op", 300)
	if err != nil || c.From != retrying || c.Attempt != 0 {
		t.Fatalf("Cancel raced by a held retry = %+v, %v; want from retrying, no attempt", c, err)
	}
	wantCancelled(t, s, a.ID, "stop", "op")
}
