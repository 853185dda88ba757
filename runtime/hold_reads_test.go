package runtime

import (
	"testing"
	"time"
)

// holdReads: a read is due when none ran yet, the last is holdReadEvery
// old, a submit marked the reads stale, or the scope changed; the poller's
// wait ends when the next read is due.
func TestHoldReadsDueAndWait(t *testing.T) {
	const every = time.Second
	t0 := time.Unix(1000, 0)
	scope := []claimGroup{{Names: []string{"a"}}}
	var h holdReads
	if !h.due(t0, every, scope) {
		t.Fatal("no read yet: want a read due")
	}
	if w := h.wait(t0, every, every); w != every {
		t.Fatalf("no read yet: wait %v, want the poll interval %v", w, every)
	}
	h.begin()
	h.finished(t0, scope)
	for _, c := range []struct {
		at   time.Duration
		due  bool
		wait time.Duration
	}{{0, false, every}, {300 * time.Millisecond, false, 700 * time.Millisecond}, {999 * time.Millisecond, false, time.Millisecond}, {every, true, 0}, {3 * every, true, 0}} {
		if got := h.due(t0.Add(c.at), every, scope); got != c.due {
			t.Errorf("%v after the last read: due %v, want %v", c.at, got, c.due)
		}
		if got := h.wait(t0.Add(c.at), every, every); got != c.wait {
			t.Errorf("%v after the last read: wait %v, want %v", c.at, got, c.wait)
		}
	}
	if !h.due(t0.Add(time.Millisecond), every, []claimGroup{{Names: []string{"a"}, Shards: []int{1, 2}}}) {
		t.Error("a new shard split: want a read due")
	}
	if !h.due(t0.Add(time.Millisecond), every, []claimGroup{{Names: []string{"a", "b"}}}) {
		t.Error("a name registered: want a read due")
	}
	h.unfinished() // also what holdSoon sets
	if !h.due(t0.Add(time.Millisecond), every, scope) {
		t.Error("stale: want a read due")
	}
	if w := h.wait(t0.Add(time.Millisecond), every, every); w != every {
		t.Errorf("stale: wait %v, want the poll interval (the next poll reads)", w)
	}
	h.begin()
	if h.due(t0.Add(time.Millisecond), every, scope) {
		t.Error("a read begun after the stale mark: want no read due")
	}
}
