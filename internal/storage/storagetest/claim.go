package storagetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// claimCases: which rows a claim takes, in which order, how many, of which
// shards, and that it takes each row once whoever else claims at the same time.
func claimCases() []testCase {
	return []testCase{
		{"DueOrderLimitShards", claimDueOrderLimitShards},
		{"ScopesAndDueBy", claimScopesAndDueBy},
		{"HeldRetriesDoNotCrowdOut", claimHeldDoNotCrowdOut},
		{"RacingClaimersWinEachRowOnce", claimRacing},
		{"FenceSkipsRowChangedSinceRead", claimFence},
		{"ByIDTakesOnlyClaimableRows", claimByIDOnlyClaimable},
		{"SubmittedTakesOnlyItsOwnRow", claimSubmittedOnlyItsOwnRow},
		{"NotCommittedTakesNothing", claimNotCommittedTakesNothing}, // claim_commit.go
	}
}

// A claim takes the due claimable rows of its names, oldest due first, at
// most its limit, of the shards it names (all for nil, none for an empty
// list): pending and retrying rows become running at the next attempt, an
// exhausted row falling_back at the same attempt, leased by the claimer.
// Future, finished, dead and leased rows stay.
func claimDueOrderLimitShards(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	const now = Millis(10_000)
	due3 := newTask("a", pending, 3000, 1)
	due1 := newTask("a", retrying, 1000, 2)
	due1.ExecuteTimes = 1
	due2 := newTask("a", pending, 2000, 1)
	future := newTask("a", pending, 20_000, 1)
	done := newTask("a", succeeded, 500, 1)
	deadRow := newTask("a", dead, 500, 1)
	otherName := newTask("b", pending, 100, 1)
	exhaustedRow := newTask("a", exhausted, 4000, 3)
	exhaustedRow.ExecuteTimes = 3
	insert(t, s, due3, due1, due2, future, done, deadRow, otherName, exhaustedRow)

	got, err := s.ClaimDue(ctx, "w1", now, now+5000, 2, []string{"a"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(idsOf(got), []int64{due1.ID, due2.ID}) {
		t.Fatalf("claimed %v, want the two oldest due %v", idsOf(got), []int64{due1.ID, due2.ID})
	}
	for i, want := range []int{2, 1} { // attempts: due1 was at 1
		c := got[i]
		if c.State != running || c.LeaseOwner != "w1" || !claimLeaseOK(c.LeaseUntil, now+5000) || c.ExecuteTimes != want || c.GmtModified != now {
			t.Fatalf("claimed row as returned: %+v", c)
		}
		if row := get(t, s, c.ID); *row != *c {
			t.Fatalf("claimed row as stored differs from as returned:\nstored   %+v\nreturned %+v", row, c)
		}
	}
	got, err = s.ClaimDue(ctx, "w2", now, now+5000, 10, []string{"a"}, []int{2, 3})
	if err != nil || len(got) != 1 || got[0].ID != exhaustedRow.ID || got[0].State != fallingBack || got[0].ExecuteTimes != 3 {
		t.Fatalf("claim of shards 2 and 3: %+v, %v; want only the exhausted task, falling_back at attempt 3", got, err)
	}
	if got, err := s.ClaimDue(ctx, "w2", now, now+5000, 10, []string{"a"}, []int{}); err != nil || len(got) != 0 {
		t.Fatalf("a claim of no shards took %v, %v", idsOf(got), err)
	}
	if got, err := s.ClaimDue(ctx, "w2", now, now+5000, 10, nil, nil); err != nil || len(got) != 0 {
		t.Fatalf("a claim of no names took %v, %v", idsOf(got), err)
	}
	got, err = s.ClaimDue(ctx, "w3", now, now+5000, 10, []string{"a"}, nil)
	if err != nil || !slices.Equal(idsOf(got), []int64{due3.ID}) {
		t.Fatalf("last claim %v, %v; want only %d (future, finished, dead, leased and other names' rows stay)", idsOf(got), err, due3.ID)
	}
	for _, id := range []int64{future.ID, done.ID, deadRow.ID, otherName.ID} {
		if row := get(t, s, id); row.LeaseOwner != "" || row.ExecuteTimes != 0 {
			t.Fatalf("row %d not due to this claim was changed: %+v", id, row)
		}
	}
}

// ClaimScoped takes the rows of several (names, shards) groups in one
// claim, and only those due by its due-by time, which may be before now.
func claimScopesAndDueBy(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	a0, a1, b1, b2 := newTask("a", pending, 100, 0), newTask("a", pending, 100, 1), newTask("b", pending, 100, 1), newTask("b", pending, 100, 2)
	late := newTask("a", pending, 900, 0)
	insert(t, s, a0, a1, b1, b2, late)
	got, err := s.ClaimScoped(ctx, "me", 1000, 500, 5000, 10, []storage.ClaimGroup{{Names: []string{"a"}, Shards: []int{0}}, {Names: []string{"b"}, Shards: []int{2}}, {Names: []string{"a"}, Shards: []int{}}})
	if err != nil {
		t.Fatal(err)
	}
	ids := idsOf(got)
	slices.Sort(ids)
	want := []int64{a0.ID, b2.ID}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("claimed %v, want %v: group a/shard 0 and b/shard 2, due by 500 (not the row due at 900)", ids, want)
	}
	if row := get(t, s, late.ID); row.State != pending {
		t.Fatalf("a row due after due-by was claimed: %+v", row)
	}
}

// Held retries due before a claimable row do not crowd it out of a claim
// whose limit they would fill: the claim passes over them and takes it.
func claimHeldDoNotCrowdOut(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	for due := range Millis(3) {
		insert(t, s, leasedTask("c", retrying, 1+due, 0, "holder", 1, 9000))
	}
	free := newTask("c", pending, 10, 0)
	insert(t, s, free)
	got, err := s.ClaimDue(ctx, "me", 100, 5000, 2, []string{"c"}, nil)
	if err != nil || !slices.Equal(idsOf(got), []int64{free.ID}) {
		t.Fatalf("claim of 2 = %v, %v; want the claimable row %d past the 3 held retries due before it", idsOf(got), err, free.ID)
	}
}

// Claimers racing on the same due rows, with overlapping scopes and
// limits, never both win one row: every row is won exactly once, and each
// claimer is told exactly the rows the database says it holds.
func claimRacing(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	const rows, claimers = 300, 12
	for i := range rows {
		insert(t, s, newTask("race", pending, Millis(i%7), i%4))
	}
	var mu sync.Mutex
	winner := map[int64]string{}
	var dup []string
	var claimed, claims atomic.Int64
	errs := make(chan error, claimers)
	var wg sync.WaitGroup
	for w := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("w%d", w)
			shards := []int{w % 4, (w + 1) % 4}
			if w%3 == 0 {
				shards = nil
			}
			for claimed.Load() < rows && ctx.Err() == nil {
				// A claim that hands out rows it does not take would go
				// on for ever: stop well past the most claims needed.
				if claims.Add(1) > 20*rows {
					errs <- fmt.Errorf("%s: still claiming after %d claims of %d rows", owner, 20*rows, rows)
					return
				}
				got, err := s.ClaimDue(ctx, owner, 1_000, 60_000, 1+w%5, []string{"race"}, shards)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", owner, err)
					return
				}
				mu.Lock()
				for _, c := range got {
					if prev, ok := winner[c.ID]; ok {
						dup = append(dup, fmt.Sprintf("row %d won by %s and %s", c.ID, prev, owner))
					}
					winner[c.ID] = owner
				}
				mu.Unlock()
				claimed.Add(int64(len(got)))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(dup) > 0 {
		t.Fatalf("%d rows won twice, first: %s", len(dup), dup[0])
	}
	if ctx.Err() != nil {
		t.Fatalf("after %s, %d of %d rows claimed", caseTimeout, len(winner), rows)
	}
	if len(winner) != rows {
		t.Fatalf("%d rows won, want %d", len(winner), rows)
	}
	var stored []struct {
		ID      int64  `db:"id"`
		Owner   string `db:"lease_owner"`
		Attempt int    `db:"execute_times"`
	}
	if err := dbx(s).Select(&stored, "SELECT id, lease_owner, execute_times FROM argo_task"); err != nil {
		t.Fatal(err)
	}
	for _, r := range stored {
		if r.Owner != winner[r.ID] || r.Attempt != 1 {
			t.Fatalf("row %d: held by %q at attempt %d, but %q was told it won it", r.ID, r.Owner, r.Attempt, winner[r.ID])
		}
	}
}

// A claim takes a candidate only if its row is still as it was read and
// its lease has ended: a row another instance took and gave back meanwhile
// (retrying again, due, unleased, one attempt further), a row another
// instance holds now, and a held retry are not taken on a stale read; a
// row still as read is.
func claimFence(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	moved, kept, taken := newTask("s", retrying, 100, 0), newTask("s", retrying, 100, 0), newTask("s", pending, 100, 0)
	moved.ExecuteTimes, kept.ExecuteTimes = 1, 1
	held := leasedTask("s", retrying, 100, 0, "holder", 1, 9000)
	insert(t, s, moved, kept, taken, held)
	staleMoved, staleKept, staleTaken, readHeld := get(t, s, moved.ID), get(t, s, kept.ID), get(t, s, taken.ID), get(t, s, held.ID)
	// Meanwhile another instance claims moved, its attempt fails and the
	// retry is due again at once; and it claims taken and runs it.
	c, err := s.ClaimByID(ctx, moved.ID, moved.ShardKey, retrying, "other", 200, 5000)
	if err != nil || c == nil {
		t.Fatalf("claim by the other instance: %v, %v", c, err)
	}
	if err := s.Finish(ctx, failure(c, retrying, 150, "failed"), 210); err != nil {
		t.Fatal(err)
	}
	claimByID(t, s, taken.ID, "other", 200, 5000)
	beforeMoved, beforeTaken, beforeHeld := get(t, s, moved.ID), get(t, s, taken.ID), get(t, s, held.ID)

	took, err := s.TakeCandidates(ctx, "me", 300, 300, 5000, []*storage.Task{staleMoved, staleKept, staleTaken, readHeld})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(idsOf(took), []int64{kept.ID}) {
		t.Fatalf("took %v, want only %d (the row still as read)", idsOf(took), kept.ID)
	}
	for _, b := range []*storage.Task{beforeMoved, beforeTaken, beforeHeld} {
		if after := get(t, s, b.ID); *after != *b {
			t.Fatalf("a stale candidate's row was changed by the claim:\n got %+v\nwant %+v", after, b)
		}
	}
	if row := get(t, s, kept.ID); row.State != running || row.LeaseOwner != "me" || row.ExecuteTimes != 2 {
		t.Fatalf("the candidate still as read: %s owner %q attempt %d, want running, me, 2", row.State, row.LeaseOwner, row.ExecuteTimes)
	}
}

// ClaimByID takes only a row that is in the asked state, due and neither
// leased nor held: never a row running (or falling back) under another
// owner, even one whose lease ran out and is not yet rescued, never a
// finished row, never a held retry; a second ClaimByID of a claimed row
// gets nothing.
func claimByIDOnlyClaimable(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	const now = Millis(10_000)
	cases := []struct {
		name string
		row  *storage.Task
		from storage.State
	}{
		{"running, lease expired, not yet rescued", leasedTask("b", running, 1000, 0, "other", 1, now-1), pending},
		{"running, live lease", leasedTask("b", running, 1000, 0, "other", 1, now+5000), pending},
		{"falling back, lease expired", leasedTask("b", fallingBack, 1000, 0, "other", 1, now-1), exhausted},
		{"succeeded", newTask("b", succeeded, 1000, 0), pending},
		{"recovered", newTask("b", recovered, 1000, 0), exhausted},
		{"held retry", leasedTask("b", retrying, 1000, 0, "other", 1, now+5000), retrying},
		{"pending, not yet due", newTask("b", pending, now+1, 0), pending},
		{"exhausted, asked as pending", newTask("b", exhausted, 1000, 0), pending},
	}
	for _, c := range cases {
		insert(t, s, c.row)
		before := get(t, s, c.row.ID)
		got, err := s.ClaimByID(ctx, c.row.ID, c.row.ShardKey, c.from, "me", now, now+2000)
		if err != nil || got != nil {
			t.Fatalf("%s: ClaimByID = %+v, %v; want nil, nil", c.name, got, err)
		}
		if after := get(t, s, c.row.ID); *after != *before {
			t.Fatalf("%s: row changed by a refused ClaimByID:\n got %+v\nwant %+v", c.name, after, before)
		}
	}
	pendingRow := newTask("b", pending, now, 0)
	exhaustedRow := newTask("b", exhausted, now-5, 0)
	exhaustedRow.ExecuteTimes = 3
	released := leasedTask("b", retrying, 1000, 0, "", 1, 0) // a hold given back at Stop
	insert(t, s, pendingRow, exhaustedRow, released)
	for _, c := range []struct {
		row     *storage.Task
		from    storage.State
		want    storage.State
		attempt int
	}{{pendingRow, pending, running, 1}, {exhaustedRow, exhausted, fallingBack, 3}, {released, retrying, running, 2}} {
		got, err := s.ClaimByID(ctx, c.row.ID, c.row.ShardKey, c.from, "me", now, now+2000)
		if err != nil || got == nil {
			t.Fatalf("ClaimByID of a claimable %s row = %v, %v", c.from, got, err)
		}
		if got.State != c.want || got.LeaseOwner != "me" || !claimLeaseOK(got.LeaseUntil, now+2000) || got.ExecuteTimes != c.attempt {
			t.Fatalf("claimed %s row: %s owner %q lease_until %d attempt %d", c.from, got.State, got.LeaseOwner, got.LeaseUntil, got.ExecuteTimes)
		}
		if again, err := s.ClaimByID(ctx, c.row.ID, c.row.ShardKey, c.from, "thief", now, now+2000); err != nil || again != nil {
			t.Fatalf("second ClaimByID of the %s row = %v, %v; want nil", c.from, again, err)
		}
	}
	if _, err := s.ClaimByID(ctx, pendingRow.ID, pendingRow.ShardKey, running, "me", now, now+2000); err == nil || !strings.Contains(err.Error(), "only pending, retrying or exhausted") {
		t.Fatalf("ClaimByID from running: %v, want a refusal", err)
	}
}
