package storagetest

import (
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// orderCases: ordered keys (storage/order.go). A keyed row is claimable
// only while no earlier row of its key is unfinished, whatever its due
// time; rows without a key and rows of other keys are not held back.
func orderCases() []testCase {
	return []testCase{
		{"ClaimTakesOnlyEachKeysHead", orderClaimHeads},
		{"KeyPassesOnAtEveryTerminalState", orderReleases},
		{"RequeuedTaskGoesToTheEnd", orderRequeue},
		{"KeyedScheduledCallsAreNotHeld", orderNotHeld},
		{"RacingClaimersKeepEachKeysOrder", orderRacing},
	}
}

// keyed is newTask with order key key.
func keyed(name, key string, state storage.State, due Millis) *storage.Task {
	task := newTask(name, state, due, 0)
	task.OrderKey = sql.NullString{String: key, Valid: true}
	return task
}

// claimIDs claims up to limit due rows of name at now for owner and
// returns their ids, or fails the test.
func claimIDs(t *testing.T, s *storage.Store, owner string, now Millis, limit int, name string) []int64 {
	t.Helper()
	got, err := s.ClaimDue(ctxFor(t), owner, now, now+60_000, limit, []string{name}, nil)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	ids := idsOf(got)
	slices.Sort(ids)
	return ids
}

// The claim takes the first row of each key only, even when a later row of
// the key is due earlier; a key whose head is leased elsewhere gives
// nothing; an unkeyed row is taken as ever.
func orderClaimHeads(t *testing.T, e Engine) {
	s := e.Open(t)
	a1 := keyed("o", "a", pending, 100)
	a2 := keyed("o", "a", pending, 50) // due first, submitted second
	b1 := leasedTask("o", running, 10, 0, "other", 1, 90_000)
	b1.OrderKey = sql.NullString{String: "b", Valid: true}
	b2 := keyed("o", "b", pending, 10)
	free := newTask("o", pending, 200, 0)
	insert(t, s, a1, a2, b1, b2, free)
	want := []int64{a1.ID, free.ID}
	slices.Sort(want)
	if got := claimIDs(t, s, "me", 1000, 10, "o"); !slices.Equal(got, want) {
		t.Fatalf("claimed %v, want %v: a1 (head of a), the unkeyed row; not a2 (behind a1), not b2 (behind running b1)", got, want)
	}
	if got := claimIDs(t, s, "me", 1000, 10, "o"); len(got) != 0 {
		t.Fatalf("second claim took %v while every key's head runs", got)
	}
}

// A key passes to its next row only when the row ahead ends succeeded,
// recovered, dead or discarded: not while it is retrying (even not due),
// exhausted or falling back.
func orderReleases(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	row := make([]*storage.Task, 6)
	for i := range row {
		row[i] = keyed("r", "k", pending, 100)
	}
	insert(t, s, row...)
	next := func(now Millis, want *storage.Task, why string) *storage.Task {
		t.Helper()
		got, err := s.ClaimDue(ctx, "me", now, now+60_000, 10, []string{"r"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			if len(got) != 0 {
				t.Fatalf("%s: claimed %v, want nothing", why, idsOf(got))
			}
			return nil
		}
		if len(got) != 1 || got[0].ID != want.ID {
			t.Fatalf("%s: claimed %v, want [%d]", why, idsOf(got), want.ID)
		}
		return got[0]
	}
	finish := func(f storage.Finishing, now Millis) {
		t.Helper()
		if err := s.Finish(ctx, f, now); err != nil {
			t.Fatal(err)
		}
	}
	// row 0: fails, retrying due at 5000: the key stays with it.
	c := next(1000, row[0], "first claim")
	finish(failure(c, retrying, 5000, "boom"), 1100)
	next(2000, nil, "row 0 retrying, not due")
	c = next(5000, row[0], "row 0's retry")
	finish(success(c), 5100) // succeeded
	// row 1: exhausted, then its fallback recovers it.
	c = next(6000, row[1], "after succeeded")
	finish(failure(c, exhausted, 6000, "last"), 6100)
	c = next(7000, row[1], "row 1's fallback (exhausted)")
	if c.State != fallingBack {
		t.Fatalf("row 1 claimed as %v, want falling_back", c.State)
	}
	next(7000, nil, "row 1 falling back")
	finish(storage.Finishing{Fence: fenceOf(c), To: recovered, Due: c.ExecuteTime}, 7100)
	// row 2: dead.
	c = next(8000, row[2], "after recovered")
	finish(failure(c, exhausted, 8000, "last"), 8050)
	c = next(8060, row[2], "row 2's dead-letter write (exhausted)")
	finish(storage.Finishing{Fence: fenceOf(c), To: dead, Due: c.ExecuteTime}, 8100)
	// row 3: discarded while waiting (row 4 must wait until then).
	c = next(9000, row[3], "after dead")
	finish(failure(c, retrying, 20_000, "again"), 9100)
	next(9500, nil, "row 3 retrying")
	if err := s.Discard(ctx, row[3].ID, "operator gave up", 9600); err != nil {
		t.Fatal(err)
	}
	next(9700, row[4], "after discarded")
}

// A requeued task is a new task at the end of its key's order: it waits
// for the rows of the key submitted before the requeue.
func orderRequeue(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	first, second := keyed("q", "k", pending, 100), keyed("q", "k", pending, 100)
	insert(t, s, first, second)
	c := claimByID(t, s, first.ID, "me", 1000, 60_000)
	if err := s.Finish(ctx, failure(c, exhausted, 1000, "last"), 1050); err != nil {
		t.Fatal(err)
	}
	fb, err := s.ClaimByID(ctx, first.ID, first.ShardKey, exhausted, "me", 1060, 60_000)
	if err != nil || fb == nil {
		t.Fatalf("claim the dead-letter write: %v, %v", fb, err)
	}
	if err := s.Finish(ctx, storage.Finishing{Fence: fenceOf(fb), To: dead, Due: fb.ExecuteTime}, 1100); err != nil {
		t.Fatal(err)
	}
	again, err := s.RequeueAsNew(ctx, first.ID, "fixed", "op", 1200)
	if err != nil {
		t.Fatal(err)
	}
	if row := get(t, s, again); row.OrderKey != first.OrderKey {
		t.Fatalf("requeued task's key %+v, want %+v", row.OrderKey, first.OrderKey)
	}
	if got := claimIDs(t, s, "me", 2000, 10, "q"); !slices.Equal(got, []int64{second.ID}) {
		t.Fatalf("claimed %v, want [%d] (the requeued %d waits behind it)", got, second.ID, again)
	}
}

// A keyed scheduled call is not held for a local timer (the hold would
// start it outside the claim's order gate); the claim starts it.
func orderNotHeld(t *testing.T, e Engine) {
	s := e.Open(t)
	free := newTask("h", pending, 1500, 1)
	ordered := keyed("h", "k", pending, 1500)
	ordered.ShardKey = 1
	insert(t, s, free, ordered)
	got, err := s.HoldScheduled(ctxFor(t), "me", 1000, 2000, holdFor, 10, []storage.ClaimGroup{{Names: []string{"h"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(idsOf(got), []int64{free.ID}) {
		t.Fatalf("held %v, want only the unkeyed %d", idsOf(got), free.ID)
	}
	if got := claimIDs(t, s, "me", 1500, 10, "h"); !slices.Equal(got, []int64{ordered.ID}) {
		t.Fatalf("claim at due time took %v, want the keyed %d", got, ordered.ID)
	}
}

// Claimers racing over many keys: per key the rows start in id order and
// never two at once; different keys run at once.
func orderRacing(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	const keys, perKey, claimers = 6, 8, 4
	submitted := map[string][]int64{}
	for i := range perKey {
		for k := range keys {
			key := fmt.Sprintf("k%d", k)
			task := keyed("race", key, pending, Millis(100+i))
			insert(t, s, task)
			submitted[key] = append(submitted[key], task.ID)
		}
	}
	var mu sync.Mutex
	running := map[string]int64{}
	started := map[string][]int64{}
	maxAtOnce, done := 0, 0
	var failed []string
	var wg sync.WaitGroup
	for w := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("w%d", w)
			for ctx.Err() == nil {
				mu.Lock()
				finished := done == keys*perKey || len(failed) > 0
				mu.Unlock()
				if finished {
					return
				}
				got, err := s.ClaimDue(ctx, owner, 10_000, 90_000, 3, []string{"race"}, nil)
				if err != nil {
					mu.Lock()
					failed = append(failed, "claim: "+err.Error())
					mu.Unlock()
					return
				}
				mu.Lock()
				for _, c := range got {
					key := c.OrderKey.String
					if prev, ok := running[key]; ok {
						failed = append(failed, fmt.Sprintf("key %s: %d started while %d runs", key, c.ID, prev))
					}
					running[key] = c.ID
					started[key] = append(started[key], c.ID)
				}
				maxAtOnce = max(maxAtOnce, len(running))
				mu.Unlock()
				for _, c := range got {
					mu.Lock() // the key is released here, before the finish commits
					delete(running, c.OrderKey.String)
					mu.Unlock()
					if err := s.Finish(ctx, success(c), 10_001); err != nil {
						mu.Lock()
						failed = append(failed, "finish: "+err.Error())
						mu.Unlock()
						return
					}
					mu.Lock()
					done++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d failures, first: %s", len(failed), failed[0])
	}
	if done != keys*perKey {
		t.Fatalf("finished %d of %d before the deadline", done, keys*perKey)
	}
	for key, ids := range submitted {
		if !slices.Equal(started[key], ids) {
			t.Fatalf("key %s started %v, want submit order %v", key, started[key], ids)
		}
	}
	if maxAtOnce < 2 {
		t.Fatalf("at most %d keys ran at once, want several", maxAtOnce)
	}
}
