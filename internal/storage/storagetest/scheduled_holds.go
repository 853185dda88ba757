package storagetest

import (
	"slices"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// scheduledHoldCases: scheduled calls (pending rows due later) held ahead
// of their due time for the owner's timer, their start, release and
// fences.
func scheduledHoldCases() []testCase {
	return []testCase{
		{"HoldsOnlyScheduledCallsDueSoonInScope", scheduledHoldTakes},
		{"HoldFence", scheduledHoldFence},
		{"StartNeedsTheOwnersHold", scheduledHoldStart},
		{"ReleaseGivesBack", scheduledHoldRelease},
	}
}

// holdFor is the hold the cases write: due + 30 s (a LeaseDuration).
const holdFor = Millis(30_000)

// HoldScheduled holds, for its owner, exactly the pending rows of its scope
// due after now and by the horizon that nobody leases: not a row due
// already (the claim's), not one due later (not held early), not a
// waiting retry, not another shard's or name's, not one another instance
// holds. The hold is due + holdFor; while it lasts no claim and no other
// owner's hold takes the row; once it runs out a claim does.
func scheduledHoldTakes(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	const now, horizon = Millis(1000), Millis(2000)
	mine := newTask("s", pending, 1500, 1)
	later := newTask("s", pending, 1200, 1)
	dueNow := newTask("s", pending, now, 1)
	tooFar := newTask("s", pending, horizon+1, 1)
	retry := newTask("s", retrying, 1500, 1)
	otherShard := newTask("s", pending, 1500, 2)
	otherName := newTask("n", pending, 1500, 1)
	heldElsewhere := leasedTask("s", pending, 1500, 1, "x", 0, 1500+holdFor)
	insert(t, s, mine, later, dueNow, tooFar, retry, otherShard, otherName, heldElsewhere)
	scope := []storage.ClaimGroup{{Names: []string{"s"}, Shards: []int{1}}}

	got, err := s.HoldScheduled(ctx, "me", now, horizon, holdFor, 10, scope)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{later.ID, mine.ID}; !slices.Equal(idsOf(got), want) {
		t.Fatalf("held %v, want %v (the two pending rows of the scope due in (now, horizon], earliest first)", idsOf(got), want)
	}
	for _, h := range got {
		if h.LeaseOwner != "me" || h.LeaseUntil != h.ExecuteTime+holdFor || h.State != pending || h.ExecuteTimes != 0 {
			t.Fatalf("returned hold: %+v", h)
		}
		row := get(t, s, h.ID)
		if row.State != pending || row.LeaseOwner != "me" || row.LeaseUntil != row.ExecuteTime+holdFor || row.ExecuteTimes != 0 || row.ExecuteTime != h.ExecuteTime {
			t.Fatalf("held row: %+v, want pending, leased by me until due + hold", row)
		}
	}
	for _, other := range []*storage.Task{dueNow, tooFar, retry, otherShard, otherName} {
		if row := get(t, s, other.ID); row.LeaseOwner != "" || row.LeaseUntil != 0 {
			t.Fatalf("row %d (due %d, %s, shard %d, %s) was held: %+v", other.ID, other.ExecuteTime, other.State, other.ShardKey, other.Name, row)
		}
	}
	if row := get(t, s, heldElsewhere.ID); row.LeaseOwner != "x" {
		t.Fatalf("another instance's hold was taken: %+v", row)
	}
	// Another owner holds none of the rows already held.
	if got, err := s.HoldScheduled(ctx, "other", now, horizon, holdFor, 10, scope); err != nil || len(got) != 0 {
		t.Fatalf("another owner held %v (%v) of rows already held", idsOf(got), err)
	}
	// Due, but held: no claim takes it before the hold runs out.
	if got, err := s.ClaimDue(ctx, "other", 1600, 9000, 10, []string{"s"}, []int{1}); err != nil || slices.Contains(idsOf(got), mine.ID) {
		t.Fatalf("claim at its due time took a held scheduled call: %v, %v", idsOf(got), err)
	}
	got, err = s.ClaimDue(ctx, "other", 1500+holdFor, 1500+holdFor+5000, 10, []string{"s"}, []int{1})
	if err != nil || !slices.Contains(idsOf(got), mine.ID) {
		t.Fatalf("claim after the hold ran out: %v, %v; want %d among them", idsOf(got), err, mine.ID)
	}
	// A limit bounds what one call holds.
	many := []*storage.Task{newTask("m", pending, 1100, 0), newTask("m", pending, 1200, 0), newTask("m", pending, 1300, 0)}
	insert(t, s, many...)
	got, err = s.HoldScheduled(ctx, "me", now, horizon, holdFor, 2, []storage.ClaimGroup{{Names: []string{"m"}}})
	if err != nil || !slices.Equal(idsOf(got), []int64{many[0].ID, many[1].ID}) {
		t.Fatalf("held %v (%v) with limit 2, want the two due first", idsOf(got), err)
	}
}

// The hold's UPDATE changes a row only if it is still as read: pending,
// same attempt count and due time, its lease ended. A row held by another
// instance (between the read and the write), claimed, discarded, or
// rescheduled is left as it is.
func scheduledHoldFence(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	const now = Millis(1000)
	heldElsewhere := leasedTask("s", pending, 1500, 1, "x", 0, 1500+holdFor)
	claimed := leasedTask("s", running, 1500, 1, "x", 1, 9000)
	free := newTask("s", pending, 1500, 1)
	gone := newTask("s", pending, 1500, 1)
	insert(t, s, heldElsewhere, claimed, free, gone)
	if err := s.Discard(ctx, gone.ID, "operator", 900); err != nil { // discarded after the read
		t.Fatal(err)
	}
	hold := func(id int64, attempt int, due Millis) int64 {
		res, err := s.DB().ExecContext(ctx, s.HoldScheduledSQL(), "me", due+holdFor, id, 1, attempt, due, now) // shard 1, as inserted
		if err != nil {
			t.Fatal(err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := hold(heldElsewhere.ID, 0, 1500); n != 0 {
		t.Fatalf("held a row another instance holds: %d rows", n)
	}
	if n := hold(claimed.ID, 0, 1500); n != 0 {
		t.Fatalf("held a running row: %d rows", n)
	}
	if n := hold(claimed.ID, 1, 1500); n != 0 {
		t.Fatalf("held a running row (its attempt as is): %d rows", n)
	}
	if n := hold(gone.ID, 0, 1500); n != 0 {
		t.Fatalf("held a discarded row: %d rows", n)
	}
	if row := get(t, s, gone.ID); row.State != discarded || row.LeaseOwner != "" {
		t.Fatalf("discarded row changed: %+v", row)
	}
	if n := hold(free.ID, 0, 1400); n != 0 {
		t.Fatalf("held a row whose due time is not as read: %d rows", n)
	}
	if n := hold(free.ID, 1, 1500); n != 0 {
		t.Fatalf("held a row whose attempt count is not as read: %d rows", n)
	}
	if row := get(t, s, heldElsewhere.ID); row.LeaseOwner != "x" || row.LeaseUntil != 1500+holdFor {
		t.Fatalf("another instance's hold changed: %+v", row)
	}
	if row := get(t, s, claimed.ID); row.State != running || row.LeaseOwner != "x" || row.LeaseUntil != 9000 {
		t.Fatalf("running row changed: %+v", row)
	}
	if n := hold(free.ID, 0, 1500); n != 1 {
		t.Fatalf("a free row as read was not held: %d rows", n)
	}
}

// A held scheduled call is started (running, attempt 1) only by its
// owner, with its own hold, while still pending: not after an operator
// discarded it, not after its hold ran out and another instance holds it
// (the same hold time: same due time, same LeaseDuration), not with a
// retry's fence.
func scheduledHoldStart(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	const now, horizon = Millis(1000), Millis(2000)
	a, b, c, d := newTask("s", pending, 1500, 1), newTask("s", pending, 1500, 2), newTask("s", pending, 1500, 3), newTask("s", pending, 1500, 4)
	insert(t, s, a, b, c, d)
	got, err := s.HoldScheduled(ctx, "me", now, horizon, holdFor, 10, []storage.ClaimGroup{{Names: []string{"s"}}})
	if err != nil || len(got) != 4 {
		t.Fatalf("held %v, %v", idsOf(got), err)
	}
	startOf := func(task *storage.Task) storage.HeldStart {
		return storage.HeldStart{ID: task.ID, Shard: task.ShardKey, Attempt: 0, HoldUntil: 1500 + holdFor, Scheduled: true}
	}
	if err := s.Discard(ctx, b.ID, "operator", 1100); err != nil { // B: discarded while held
		t.Fatal(err)
	}
	// C: this owner stalled past the hold; another instance holds it again
	// with the same hold time.
	if err := s.ReleaseHolds(ctx, "me", []storage.RowKey{storage.KeyOf(c)}); err != nil {
		t.Fatal(err)
	}
	if again, err := s.HoldScheduled(ctx, "other", now, horizon, holdFor, 10, []storage.ClaimGroup{{Names: []string{"s"}, Shards: []int{3}}}); err != nil || !slices.Equal(idsOf(again), []int64{c.ID}) {
		t.Fatalf("held again by other: %v, %v", idsOf(again), err)
	}
	dRetry := startOf(d)
	dRetry.Scheduled = false // a retry's fence (retrying) on a pending row
	started, err := s.StartHeld(ctx, "me", []storage.HeldStart{startOf(a), startOf(b), startOf(c), dRetry}, 9000, 1500)
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, false, false}; !slices.Equal(started, want) {
		t.Fatalf("started %v, want %v (A held, B discarded, C held by another, D with a retry's fence)", started, want)
	}
	if row := get(t, s, a.ID); row.State != running || row.ExecuteTimes != 1 || row.LeaseOwner != "me" || row.LeaseUntil != 9000 || row.GmtModified != 1500 {
		t.Fatalf("started row: %+v", row)
	}
	if row := get(t, s, c.ID); row.State != pending || row.LeaseOwner != "other" || row.ExecuteTimes != 0 {
		t.Fatalf("another owner's hold changed: %+v", row)
	}
	if row := get(t, s, d.ID); row.State != pending || row.ExecuteTimes != 0 {
		t.Fatalf("D started with a retry's fence: %+v", row)
	}
	// Started once: the same start again changes nothing.
	if again, err := s.StartHeld(ctx, "me", []storage.HeldStart{startOf(a)}, 9000, 1500); err != nil || again[0] {
		t.Fatalf("second start of A: %v, %v", again, err)
	}
}

// ReleaseHolds gives a held scheduled call back (pending, due as before,
// no owner: claimable when due by anyone), only its owner's; the holds of
// gone instances count in DeadHolds.
func scheduledHoldRelease(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	const now, horizon = Millis(1000), Millis(2000)
	a, b := newTask("s", pending, 1500, 1), newTask("s", pending, 1600, 1)
	insert(t, s, a, b)
	if got, err := s.HoldScheduled(ctx, "me", now, horizon, holdFor, 10, []storage.ClaimGroup{{Names: []string{"s"}}}); err != nil || len(got) != 2 {
		t.Fatalf("held %v, %v", idsOf(got), err)
	}
	dead, err := s.DeadHolds(ctx, "someone", now, now)
	if err != nil || len(dead) != 1 || dead[0] != (storage.DeadHold{Owner: "me", Tasks: 2, Until: 1600 + holdFor}) {
		t.Fatalf("DeadHolds %+v (%v), want me: 2 held scheduled calls until %d", dead, err, 1600+holdFor)
	}
	if err := s.ReleaseHolds(ctx, "other", []storage.RowKey{storage.KeyOf(a), storage.KeyOf(b)}); err != nil {
		t.Fatal(err)
	}
	if row := get(t, s, a.ID); row.LeaseOwner != "me" {
		t.Fatalf("another owner's release gave back my hold: %+v", row)
	}
	if err := s.ReleaseHolds(ctx, "me", []storage.RowKey{storage.KeyOf(a)}); err != nil {
		t.Fatal(err)
	}
	if row := get(t, s, a.ID); row.State != pending || row.LeaseOwner != "" || row.LeaseUntil != 0 || row.ExecuteTime != 1500 || row.ExecuteTimes != 0 {
		t.Fatalf("given back: %+v, want pending, unleased, due as before", row)
	}
	got, err := s.ClaimDue(ctx, "other", 1500, 9000, 10, []string{"s"}, nil)
	if err != nil || !slices.Equal(idsOf(got), []int64{a.ID}) {
		t.Fatalf("claim at its due time after the give-back: %v, %v; want only %d (B still held)", idsOf(got), err, a.ID)
	}
}
