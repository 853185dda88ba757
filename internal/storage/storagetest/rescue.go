package storagetest

import (
	"slices"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// rescueCases: leases that run out, their rescue, and their renewal.
func rescueCases() []testCase {
	return []testCase{
		{"ExpiredLeases", rescueExpiredLeases},
		{"RescueLosesToRenewal", rescueLosesToRenewal},
		{"RenewalFence", rescueRenewalFence},
		{"RenewalNeverShortens", rescueRenewalNeverShortens},
	}
}

// ExpiredLeases lists the running and falling-back rows whose lease ran
// out before now, soonest expired first, at most the limit; live leases
// and held retries are not listed.
func rescueExpiredLeases(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	late := leasedTask("x", running, 1, 0, "w", 1, 150)
	early := leasedTask("x", fallingBack, 1, 0, "w", 3, 100)
	third := leasedTask("x", running, 1, 0, "w", 1, 180)
	live := leasedTask("x", running, 1, 0, "w", 1, 500)
	heldRetry := leasedTask("x", retrying, 1, 0, "w", 1, 50)
	insert(t, s, late, early, third, live, heldRetry)
	got, err := s.ExpiredLeases(ctx, 200, 2)
	if err != nil || !slices.Equal(idsOf(got), []int64{early.ID, late.ID}) {
		t.Fatalf("ExpiredLeases(200, limit 2) = %v, %v; want %v", idsOf(got), err, []int64{early.ID, late.ID})
	}
	got, err = s.ExpiredLeases(ctx, 200, 10)
	if err != nil || !slices.Equal(idsOf(got), []int64{early.ID, late.ID, third.ID}) {
		t.Fatalf("ExpiredLeases(200) = %v, %v; want %v (not the live lease nor the held retry)", idsOf(got), err, []int64{early.ID, late.ID, third.ID})
	}
}

// A rescue applies only to the lease exactly as it expired: a worker that
// renewed just before wins (ErrLeaseLost, nothing written); a rescued
// row is retrying, unleased, with a lease_expired attempt; the vanished
// worker's late finish is refused.
func rescueLosesToRenewal(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	insert(t, s, newTask("r", pending, 1, 0), newTask("r", pending, 2, 0))
	got, err := s.ClaimDue(ctx, "w", 10, 100, 2, []string{"r"}, nil)
	if err != nil || len(got) != 2 {
		t.Fatalf("claim: %v, %v", idsOf(got), err)
	}
	expired, err := s.ExpiredLeases(ctx, 200, 10)
	if err != nil || len(expired) != 2 {
		t.Fatalf("expired leases %v, %v; want 2", idsOf(expired), err)
	}
	// The worker of the first task renews just before the rescuer writes.
	if lost, err := s.ExtendLeases(ctx, "w", []storage.LeaseKey{{ID: got[0].ID, Attempt: got[0].ExecuteTimes}}, 300, 150); err != nil || len(lost) != 0 {
		t.Fatalf("renewal: lost %v, %v", lost, err)
	}
	renewedBefore := get(t, s, got[0].ID)
	for _, x := range expired {
		f := failure(x, retrying, 250, "lease expired")
		f.History.Outcome = outcomeLeaseExpired
		err := s.Rescue(ctx, f, x.LeaseUntil, 200)
		if x.ID == got[0].ID {
			wantLeaseLost(t, "rescue of a renewed lease", err)
			continue
		}
		if err != nil {
			t.Fatalf("rescue of %d: %v", x.ID, err)
		}
	}
	if row := get(t, s, got[0].ID); *row != *renewedBefore {
		t.Fatalf("the refused rescue changed the renewed row:\n got %+v\nwant %+v", row, renewedBefore)
	}
	if atts := attempts(t, s, got[0].ID); len(atts) != 0 {
		t.Fatalf("the refused rescue wrote history %+v", atts)
	}
	rescued := get(t, s, got[1].ID)
	if rescued.State != retrying || rescued.ExecuteTimes != 1 || rescued.LeaseOwner != "" || rescued.LeaseUntil != 0 || rescued.ExecuteTime != 250 || rescued.ErrorMsg != "lease expired" {
		t.Fatalf("rescued row %+v", rescued)
	}
	if atts := attempts(t, s, got[1].ID); len(atts) != 1 || atts[0].Outcome != outcomeLeaseExpired {
		t.Fatalf("rescued row's history %+v, want one lease_expired attempt", atts)
	}
	// The vanished worker comes back: its late finish is refused.
	late := success(got[1])
	wantLeaseLost(t, "late finish after the rescue", s.Finish(ctx, late, 400))
	if row := get(t, s, got[1].ID); *row != *rescued {
		t.Fatalf("the late finish changed the rescued row: %+v", row)
	}
}

// ExtendLeases renews only leases the owner still holds for that attempt:
// a lease of another owner, of an earlier attempt, a rescued row, a
// finished row and the owner's own held retry are reported lost and left as they are; a lease renewed to
// the same time already is still held.
func rescueRenewalFence(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	mine := leasedTask("r", running, 1, 0, "me", 1, 100)
	fallback := leasedTask("r", fallingBack, 1, 0, "me", 3, 100)
	theirs := leasedTask("r", running, 1, 0, "other", 1, 100)
	nextAttempt := leasedTask("r", running, 1, 0, "me", 2, 100) // renewed as attempt 1 below
	rescued := leasedTask("r", retrying, 1, 0, "", 1, 0)
	finished := newTask("r", succeeded, 1, 0)
	finished.ExecuteTimes = 1
	same := leasedTask("r", running, 1, 0, "me", 1, 300)
	held := leasedTask("r", retrying, 1, 0, "me", 1, 100) // a hold is no lease to renew
	insert(t, s, mine, fallback, theirs, nextAttempt, rescued, finished, same, held)
	keys := []storage.LeaseKey{{ID: mine.ID, Attempt: 1}, {ID: fallback.ID, Attempt: 3}, {ID: theirs.ID, Attempt: 1},
		{ID: nextAttempt.ID, Attempt: 1}, {ID: rescued.ID, Attempt: 1}, {ID: finished.ID, Attempt: 1}, {ID: same.ID, Attempt: 1}, {ID: held.ID, Attempt: 1}}
	before := map[int64]storage.Task{}
	for _, k := range keys {
		before[k.ID] = *get(t, s, k.ID)
	}
	lost, err := s.ExtendLeases(ctx, "me", keys, 300, 150)
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.LeaseKey{{ID: theirs.ID, Attempt: 1}, {ID: nextAttempt.ID, Attempt: 1}, {ID: rescued.ID, Attempt: 1}, {ID: finished.ID, Attempt: 1}, {ID: held.ID, Attempt: 1}}
	if !slices.Equal(lost, want) {
		t.Fatalf("lost %v, want %v", lost, want)
	}
	for _, id := range []int64{mine.ID, fallback.ID, same.ID} {
		if row := get(t, s, id); row.LeaseUntil != 300 {
			t.Fatalf("held lease %d: lease_until %d, want 300", id, row.LeaseUntil)
		}
	}
	for _, k := range want {
		if row := get(t, s, k.ID); *row != before[k.ID] {
			t.Fatalf("a lost lease's row was changed by the renewal:\n got %+v\nwant %+v", row, before[k.ID])
		}
	}
}

// A renewal never shortens a lease: one sent earlier that lands after a
// later one (its connection stalled, then delivered) leaves the later end,
// and the lease is still reported held. The instance's own deadline for the
// lease is taken from the later renewal's send.
func rescueRenewalNeverShortens(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	task := leasedTask("r", running, 1, 0, "me", 1, 500)
	insert(t, s, task)
	lost, err := s.ExtendLeases(ctx, "me", []storage.LeaseKey{{ID: task.ID, Attempt: 1}}, 300, 150)
	if err != nil || len(lost) != 0 {
		t.Fatalf("a stale renewal: lost %v, %v; want the lease held", lost, err)
	}
	if row := get(t, s, task.ID); row.LeaseUntil != 500 {
		t.Fatalf("a renewal to 300 of a lease until 500 left lease_until %d, want 500", row.LeaseUntil)
	}
	if _, err := s.ExtendLeases(ctx, "me", []storage.LeaseKey{{ID: task.ID, Attempt: 1}}, 700, 150); err != nil {
		t.Fatal(err)
	}
	if row := get(t, s, task.ID); row.LeaseUntil != 700 {
		t.Fatalf("a renewal to 700 left lease_until %d, want 700", row.LeaseUntil)
	}
}
