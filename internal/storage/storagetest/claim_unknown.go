package storagetest

import (
	"context"
	"errors"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

func claimUnknownCases() []testCase {
	return []testCase{
		{"GiveBackUnclaimed", claimUnknownGiveBack},
		{"GiveBackSparesALaterClaimOfTheSameTime", claimUnknownSparesLaterClaim},
	}
}

// maybeClaimed is what a claim by owner at now until leaseUntil whose
// outcome is unknown (its context canceled mid-commit) names for cands.
func maybeClaimed(t *testing.T, s *storage.Store, owner string, now, leaseUntil Millis, cands ...*storage.Task) []storage.MaybeClaimed {
	t.Helper()
	err := storage.ClaimUnknown(s.Driver(), context.Canceled, owner, now, leaseUntil, cands)
	var cu *storage.ClaimUnknownError
	if !errors.As(err, &cu) || len(cu.Rows) != len(cands) {
		t.Fatalf("ClaimUnknown of %d candidates after a canceled commit: %v, want a ClaimUnknownError naming them", len(cands), err)
	}
	return cu.Rows
}

// GiveBackUnclaimed puts back, as read before the claim (state and attempt
// count, no lease), exactly the rows a claim whose outcome was unknown took
// and nothing has written since; every other row is left alone: one the
// claim did not take (another owner took it), one rescued and claimed again
// (another attempt count), one whose lease was renewed (another lease end),
// one given back and claimed again (another modification time), one whose
// attempt ran and whose retry is held (another state).
func claimUnknownGiveBack(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	const now, until = Millis(1_000), Millis(61_000)
	taken := newTask("a", pending, 10, 0)
	retry := newTask("a", retrying, 10, 0)
	retry.ExecuteTimes = 2
	fallback := newTask("a", exhausted, 10, 0)
	fallback.ExecuteTimes = 3
	theirs := newTask("a", pending, 10, 0)
	renewed := newTask("a", pending, 10, 0)
	again := newTask("a", pending, 10, 0)
	rescued := newTask("a", pending, 10, 0)
	held := newTask("a", pending, 10, 0)
	insert(t, s, taken, retry, fallback, theirs, renewed, again, rescued, held)
	asRead := func(id int64) *storage.Task { return get(t, s, id) }
	cands := []*storage.Task{asRead(taken.ID), asRead(retry.ID), asRead(fallback.ID), asRead(theirs.ID), asRead(renewed.ID), asRead(again.ID), asRead(rescued.ID), asRead(held.ID)}

	// The lease end each row's latest claim wrote: claims of one Store
	// write distinct ones (claimLease), so the rows the unknown claim names
	// are given, below, the lease end each row's claim wrote, and each case
	// differs from it in one column only.
	lease := map[int64]Millis{}
	// This owner's claim takes all but theirs, which another owner takes.
	if got := claimByID(t, s, theirs.ID, "other", now, until); got == nil {
		t.Fatal("the other owner's claim took nothing")
	} else {
		lease[theirs.ID] = got.LeaseUntil
	}
	for _, c := range []struct {
		id   int64
		from storage.State
	}{{taken.ID, pending}, {retry.ID, retrying}, {fallback.ID, exhausted}, {renewed.ID, pending}, {again.ID, pending}, {rescued.ID, pending}, {held.ID, pending}} {
		got, err := s.ClaimByID(ctx, c.id, 0, c.from, "me", now, until)
		if err != nil || got == nil {
			t.Fatalf("claim of row %d (%s): %v, %v", c.id, c.from, got, err)
		}
		lease[c.id] = got.LeaseUntil
	}
	// Each of these differs from the claim's write in one column only.
	// renewed: its lease renewed since (lease_until).
	if lost, err := s.ExtendLeases(ctx, "me", []storage.LeaseKey{{ID: renewed.ID, Attempt: 1}}, until+1_000, now+5); err != nil || len(lost) != 0 {
		t.Fatalf("renewal: lost %v, %v", lost, err)
	}
	// again: given back and claimed again by this owner at the same
	// attempt and lease end, later (gmt_modified).
	if err := s.Finish(ctx, storage.Finishing{Fence: storage.Fence{ID: again.ID, Owner: "me", Attempt: 1, From: running}, To: pending, Due: 10, UndoAttempt: true}, now+5); err != nil {
		t.Fatalf("give-back at Stop: %v", err)
	}
	if got, err := s.ClaimByID(ctx, again.ID, again.ShardKey, pending, "me", now+10, until); err != nil || got == nil || got.ExecuteTimes != 1 {
		t.Fatalf("claim again: %+v, %v", got, err)
	} else {
		lease[again.ID] = got.LeaseUntil
	}
	// rescued: its lease given up with the attempt counted, then claimed
	// again by this owner with the same lease end and time (execute_times).
	if err := s.Finish(ctx, storage.Finishing{Fence: storage.Fence{ID: rescued.ID, Owner: "me", Attempt: 1, From: running}, To: retrying, Due: 10}, now+5); err != nil {
		t.Fatalf("rescue: %v", err)
	}
	if got, err := s.ClaimByID(ctx, rescued.ID, rescued.ShardKey, retrying, "me", now, until); err != nil || got == nil || got.ExecuteTimes != 2 {
		t.Fatalf("claim after the rescue: %+v, %v", got, err)
	} else {
		lease[rescued.ID] = got.LeaseUntil
	}

	// held: its attempt ran and failed, the retry held by this owner until
	// the same lease end, written at the same time (task_status).
	if err := s.Finish(ctx, storage.Finishing{Fence: storage.Fence{ID: held.ID, Owner: "me", Attempt: 1, From: running}, To: retrying, Due: 10, HoldUntil: lease[held.ID]}, now); err != nil {
		t.Fatalf("held retry: %v", err)
	}

	rows := maybeClaimed(t, s, "me", now, until, cands...)
	for i := range rows {
		rows[i].LeaseUntil = lease[rows[i].ID]
	}
	gave, left, err := s.GiveBackUnclaimed(ctx, rows, now+20)
	if err != nil || len(left) != 0 || gave != 3 {
		t.Fatalf("GiveBackUnclaimed: gave %d, left %d, %v; want 3 (taken, retry, fallback), 0, nil", gave, len(left), err)
	}
	want := []struct {
		what    string
		id      int64
		state   storage.State
		attempt int
		owner   string
	}{
		{"a first attempt taken", taken.ID, pending, 0, ""},
		{"a retry taken", retry.ID, retrying, 2, ""},
		{"a fallback taken", fallback.ID, exhausted, 3, ""},
		{"a row another owner took", theirs.ID, running, 1, "other"},
		{"a row whose lease was renewed", renewed.ID, running, 1, "me"},
		{"a row claimed again since", again.ID, running, 1, "me"},
		{"a row rescued and claimed again", rescued.ID, running, 2, "me"},
		{"a row whose attempt ran, its retry held", held.ID, retrying, 1, "me"},
	}
	for _, w := range want {
		got := get(t, s, w.id)
		if got.State != w.state || got.ExecuteTimes != w.attempt || got.LeaseOwner != w.owner || (w.owner == "") != (got.LeaseUntil == 0) {
			t.Errorf("%s: %s, attempt %d, owner %q, lease until %d; want %s, attempt %d, owner %q", w.what, got.State, got.ExecuteTimes, got.LeaseOwner, got.LeaseUntil, w.state, w.attempt, w.owner)
		}
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task_attempt"); n != 0 {
		t.Errorf("%d attempt rows written; a give-back writes none", n)
	}
}

// A claim whose outcome was unknown, then another claim by the same owner
// dated the same (the poller's claim of its own shards and the steal claim
// of the same poll share one now and one lease end): the second takes the
// row the first did not. The give-back of the first, fenced on the row as
// the first would have written it, must leave the second's claim alone;
// before claims of one Store got distinct lease ends, it undid it, and the
// attempt the second claim ran ran again under its number.
func claimUnknownSparesLaterClaim(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	const now, until = Millis(1_000), Millis(61_000)
	row := newTask("a", pending, 10, 0)
	insert(t, s, row)
	asRead := get(t, s, row.ID)
	// The first claim (its answer lost; here it takes nothing), then the
	// second, both at now until until.
	if got, err := s.ClaimScoped(ctx, "me", now, now, until, 10, []storage.ClaimGroup{{Names: []string{"none"}}}); err != nil || len(got) != 0 {
		t.Fatalf("first claim: %v, %v", got, err)
	}
	got, err := s.ClaimScoped(ctx, "me", now, now, until, 10, []storage.ClaimGroup{{Names: []string{"a"}}})
	if err != nil || len(got) != 1 {
		t.Fatalf("second claim: %v, %v; want the row", got, err)
	}
	if got[0].LeaseUntil == until {
		t.Errorf("two claims of one Store at one time both wrote lease end %d: a give-back of the first matches the second", until)
	}
	if stored := get(t, s, row.ID); stored.LeaseUntil != got[0].LeaseUntil {
		t.Fatalf("the claim returned lease end %d, the row holds %d", got[0].LeaseUntil, stored.LeaseUntil)
	}
	gave, left, err := s.GiveBackUnclaimed(ctx, maybeClaimed(t, s, "me", now, until, asRead), now+5)
	if err != nil || len(left) != 0 {
		t.Fatalf("GiveBackUnclaimed: %v (left %v)", err, left)
	}
	if gave != 0 {
		t.Fatalf("the give-back of the first claim gave back %d rows: it undid the second claim's", gave)
	}
	if after := get(t, s, row.ID); after.State != storage.StateRunning || after.ExecuteTimes != 1 || after.LeaseOwner != "me" {
		t.Fatalf("after the give-back: %s, attempt %d, owner %q; want running, attempt 1, owner me", after.State, after.ExecuteTimes, after.LeaseOwner)
	}
}
