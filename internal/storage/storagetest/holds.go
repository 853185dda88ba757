package storagetest

import (
	"slices"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// holdCases: held retries (a failed attempt's retry kept leased by its
// owner until the owner's timer starts it), their start, release, and the
// holds of instances that are gone.
func holdCases() []testCase {
	return []testCase{
		{"HeldStartsExactlyTheOwnersHolds", holdsStart},
		{"HeldStartNeedsTheOwner", holdsNeedOwner},
		{"HeldStartAlone", holdsStartAlone},
		{"ResolveHeldStart", holdsResolveStart},
		{"DeadHolds", holdsDead},
	}
}

// hold claims a new task of shard for "me", fails its attempt and holds
// its retry until holdUntil, and returns the hold.
func hold(t *testing.T, s *storage.Store, shard int, holdUntil Millis) storage.HeldStart {
	t.Helper()
	task := newTask("h", pending, 1, shard)
	insert(t, s, task)
	c := claimByID(t, s, task.ID, "me", 10, 1000)
	f := failure(c, retrying, 100, "boom")
	f.HoldUntil = holdUntil
	if err := s.Finish(ctxFor(t), f, 20); err != nil {
		t.Fatal(err)
	}
	return storage.HeldStart{ID: c.ID, Shard: shard, Attempt: 1, HoldUntil: holdUntil}
}

// A held retry stays leased by its owner: no claim takes it before its
// hold ends. StartHeld starts exactly the holds still this owner's (not
// one discarded meanwhile, not one claimed elsewhere after its hold ran
// out, not one whose hold differs), each as running at the next attempt.
// ReleaseHolds gives holds back (claimable at once) and leaves running
// rows alone.
func holdsStart(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	a, b, c, d := hold(t, s, 1, 5000), hold(t, s, 2, 5000), hold(t, s, 3, 5000), hold(t, s, 4, 5000)
	if row := get(t, s, a.ID); row.State != retrying || row.LeaseOwner != "me" || row.LeaseUntil != 5000 || row.ExecuteTime != 100 {
		t.Fatalf("held row: %+v", row)
	}
	if got, err := s.ClaimDue(ctx, "other", 4999, 9000, 10, []string{"h"}, nil); err != nil || len(got) != 0 {
		t.Fatalf("claimed %v (%v) held retries before their hold ran out", idsOf(got), err)
	}
	if got, err := s.ClaimByID(ctx, a.ID, a.Shard, retrying, "other", 4999, 9000); err != nil || got != nil {
		t.Fatalf("ClaimByID took a held retry: %v, %v", got, err)
	}
	if err := s.Discard(ctx, b.ID, "operator", 30); err != nil { // B: discarded while held
		t.Fatal(err)
	}
	got, err := s.ClaimDue(ctx, "other", 5000, 9000, 10, []string{"h"}, []int{3}) // C: hold ran out, claimed elsewhere
	if err != nil || !slices.Equal(idsOf(got), []int64{c.ID}) {
		t.Fatalf("claim after the hold: %v, %v", idsOf(got), err)
	}
	dOther := d
	dOther.HoldUntil = 4999 // not the hold D was written with
	started, err := s.StartHeld(ctx, "me", []storage.HeldStart{a, b, c, dOther}, 7000, 120)
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, false, false}; !slices.Equal(started, want) {
		t.Fatalf("started %v, want %v (A held, B discarded, C claimed elsewhere, D another hold)", started, want)
	}
	if row := get(t, s, a.ID); row.State != running || row.ExecuteTimes != 2 || row.LeaseOwner != "me" || row.LeaseUntil != 7000 || row.GmtModified != 120 {
		t.Fatalf("started row: %+v", row)
	}
	if row := get(t, s, b.ID); row.State != discarded {
		t.Fatalf("discarded hold: %s", row.State)
	}
	if row := get(t, s, c.ID); row.LeaseOwner != "other" || row.ExecuteTimes != 2 {
		t.Fatalf("row claimed elsewhere changed: owner %q attempt %d", row.LeaseOwner, row.ExecuteTimes)
	}
	if row := get(t, s, d.ID); row.State != retrying || row.ExecuteTimes != 1 || row.LeaseUntil != 5000 {
		t.Fatalf("hold D was started with another hold's fence: %+v", row)
	}
	// Giving D (and A, running now) back: D is claimable at once, A is left.
	if err := s.ReleaseHolds(ctx, "me", []storage.RowKey{{ID: d.ID, Shard: d.Shard}, {ID: a.ID, Shard: a.Shard}}); err != nil {
		t.Fatal(err)
	}
	if row := get(t, s, a.ID); row.State != running || row.LeaseOwner != "me" || row.LeaseUntil != 7000 {
		t.Fatalf("ReleaseHolds touched a running task: %+v", row)
	}
	if row := get(t, s, d.ID); row.State != retrying || row.LeaseOwner != "" || row.LeaseUntil != 0 || row.ExecuteTime != 100 {
		t.Fatalf("released hold: %+v, want retrying, unleased, due as before", row)
	}
	if got, err := s.ClaimDue(ctx, "other", 200, 9000, 10, []string{"h"}, []int{4}); err != nil || !slices.Equal(idsOf(got), []int64{d.ID}) {
		t.Fatalf("given-back hold not claimable: %v, %v", idsOf(got), err)
	}
}

// A held retry is started only by its owner: a row held by another
// instance with the same attempt and hold is not started, and is left as
// it was; ReleaseHolds by another owner gives nothing back.
func holdsNeedOwner(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	mine, theirs := leasedTask("h", retrying, 100, 1, "me", 1, 5000), leasedTask("h", retrying, 100, 1, "other", 1, 5000)
	insert(t, s, mine, theirs)
	before := get(t, s, theirs.ID)
	if err := s.ReleaseHolds(ctx, "me", []storage.RowKey{storage.KeyOf(theirs)}); err != nil {
		t.Fatal(err)
	}
	started, err := s.StartHeld(ctx, "me", []storage.HeldStart{
		{ID: theirs.ID, Shard: 1, Attempt: 1, HoldUntil: 5000},
		{ID: mine.ID, Shard: 1, Attempt: 1, HoldUntil: 5000},
	}, 7000, 120)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(started, []bool{false, true}) {
		t.Fatalf("started %v, want [false true]: only the hold this owner has starts", started)
	}
	if after := get(t, s, theirs.ID); *after != *before {
		t.Fatalf("another owner's hold changed:\n got %+v\nwant %+v", after, before)
	}
	if row := get(t, s, mine.ID); row.State != running || row.ExecuteTimes != 2 || row.LeaseUntil != 7000 || row.LeaseOwner != "me" {
		t.Fatalf("own hold: %+v", row)
	}
}

// A start of one hold (one autocommitted UPDATE, not a transaction)
// reports, as a start of several does, exactly whether it started the row:
// not a hold written with another hold time, nor one of another owner;
// then its own, running at the next attempt.
func holdsStartAlone(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	a := hold(t, s, 1, 5000)
	before := get(t, s, a.ID)
	other := a
	other.HoldUntil = 4999
	for _, try := range []struct {
		what, owner string
		h           storage.HeldStart
	}{{"another hold", "me", other}, {"another owner", "you", a}} {
		started, err := s.StartHeld(ctx, try.owner, []storage.HeldStart{try.h}, 7000, 120)
		if err != nil || !slices.Equal(started, []bool{false}) {
			t.Fatalf("start of %s: %v, %v; want [false]", try.what, started, err)
		}
		if after := get(t, s, a.ID); *after != *before {
			t.Fatalf("start of %s changed the row:\n got %+v\nwant %+v", try.what, after, before)
		}
	}
	started, err := s.StartHeld(ctx, "me", []storage.HeldStart{a}, 7000, 120)
	if err != nil || !slices.Equal(started, []bool{true}) {
		t.Fatalf("start of the hold: %v, %v; want [true]", started, err)
	}
	if row := get(t, s, a.ID); row.State != running || row.ExecuteTimes != 2 || row.LeaseOwner != "me" || row.LeaseUntil != 7000 || row.GmtModified != 120 {
		t.Fatalf("started row: %+v", row)
	}
}

// ResolveHeldStart settles a start whose answer was lost: the holds the
// first run started are reported started (read back by their post-state),
// none is started twice, and a hold that was not this owner's stays
// unstarted.
func holdsResolveStart(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	a, b := hold(t, s, 1, 5000), hold(t, s, 2, 5000)
	theirs := leasedTask("h", retrying, 100, 3, "other", 1, 5000)
	insert(t, s, theirs)
	holds := []storage.HeldStart{a, {ID: theirs.ID, Shard: 3, Attempt: 1, HoldUntil: 5000}}
	if started, err := s.StartHeld(ctx, "me", holds, 7000, 120); err != nil || !slices.Equal(started, []bool{true, false}) {
		t.Fatalf("first start: %v, %v", started, err)
	}
	// The answer of that start was lost; it is resolved, with b added.
	started, err := s.ResolveHeldStart(ctx, "me", append(holds, b), 7000, 120)
	if err != nil || !slices.Equal(started, []bool{true, false, true}) {
		t.Fatalf("resolved start: %v, %v; want [true false true]", started, err)
	}
	for _, h := range []storage.HeldStart{a, b} {
		if row := get(t, s, h.ID); row.State != running || row.ExecuteTimes != 2 {
			t.Fatalf("hold %d after the resolution: %s at attempt %d, want running at attempt 2 (started once)", h.ID, row.State, row.ExecuteTimes)
		}
	}
	if row := get(t, s, theirs.ID); row.State != retrying || row.LeaseOwner != "other" {
		t.Fatalf("another owner's hold: %+v", row)
	}
}

// DeadHolds counts, per owner, the live holds of instances that have not
// heartbeated since the cutoff (and of this instance's previous run), with
// when the last runs out; holds of live instances, holds run out, running
// and finished rows are not counted.
func holdsDead(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	const now, cutoff = Millis(100_000), Millis(90_000)
	heldBy := func(owner string, state storage.State, until Millis) *storage.Task {
		return leasedTask("held-elsewhere", state, now, 0, owner, 1, until)
	}
	insert(t, s,
		heldBy("crashed-a", retrying, now+60_000),
		heldBy("crashed-a", retrying, now+90_000),
		heldBy("crashed-b", retrying, now+30_000),
		heldBy("alive", retrying, now+120_000),      // a live instance's hold
		heldBy("crashed-c", retrying, now-1000),     // hold already run out
		heldBy("crashed-d", running, now+200_000),   // a running attempt, not a hold
		heldBy("crashed-e", succeeded, now+200_000), // finished
		heldBy("restarted", retrying, now+10_000),   // this instance's previous run
		heldBy("stale", retrying, now+20_000),       // an instance whose heartbeat stopped
	)
	for id, beat := range map[string]Millis{"alive": now, "restarted": now, "stale": cutoff - 1} {
		if err := s.RecordHeartbeat(ctx, id, []string{"held-elsewhere"}, beat); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.DeadHolds(ctx, "restarted", cutoff, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.DeadHold{
		{Owner: "crashed-a", Tasks: 2, Until: now + 90_000},
		{Owner: "crashed-b", Tasks: 1, Until: now + 30_000},
		{Owner: "restarted", Tasks: 1, Until: now + 10_000},
		{Owner: "stale", Tasks: 1, Until: now + 20_000},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("DeadHolds = %+v\nwant %+v", got, want)
	}
}
