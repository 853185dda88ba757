package storagetest

import (
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// orderRequeueCases: an ordered key under a requeue of an upstream task
// (docs/semantics.md, "Ordered keys").
func orderRequeueCases() []testCase {
	return []testCase{
		{"SkippedKeyedDownstreamReentersAtTheEnd", orderSkippedKeyedRequeue},
	}
}

// The break: D (key k) runs after U; U dies, D is skipped and its key
// passes on to E, the next call of k, which starts. Requeueing U brought D
// back to blocked: D held k again and, once U's new task succeeded, ran
// while E ran. Now D stays skipped and is requeued as a new call D2 at the
// end of k (behind E), blocked after U's new task; F, after D, comes back
// after D2. D2 starts only once U's new task succeeded and E has ended.
func orderSkippedKeyedRequeue(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	names := []string{"a", "b", "c"}
	g := group(100, names, map[int][]int{1: {0}, 2: {1}}) // U; D after U; F after D
	g[1].Task.OrderKey = nullKey("k")
	ids := submitGroup(t, s, g, 100)
	u, d, f := ids[0], ids[1], ids[2]
	later := keyed("b", "k", pending, 100) // E: the key's next call
	insert(t, s, later)
	die(t, s, writePaths[0].finish, claimOnly(t, s, 150, u)[0], 160)
	wantStates(t, s, "after U died", map[int64]storage.State{d: storage.StateSkipped, f: storage.StateSkipped})
	eRow := claimOnly(t, s, 200, later.ID)[0] // the key passed on: E runs
	u2, err := s.RequeueAsNew(ctx, u, "fixed", "op", 300)
	if err != nil {
		t.Fatal(err)
	}
	wantStates(t, s, "after U's requeue", map[int64]storage.State{d: storage.StateSkipped, later.ID: running, u2: pending})
	d2 := links(t, s, d).To
	if d2 == 0 {
		t.Fatalf("the skipped keyed task %d was not requeued as a new call", d)
	}
	if row := get(t, s, d2); row.State != storage.StateBlocked || row.OrderKey != nullKey("k") || row.ID < later.ID {
		t.Fatalf("D's new task %d: state %s, key %v; want blocked, key k, after E (%d)", d2, row.State, row.OrderKey, later.ID)
	}
	if ups, err := s.Upstream(ctx, d2); err != nil || len(ups) != 1 || ups[0].TaskID != u2 {
		t.Fatalf("upstream of D's new task: %+v, %v; want U's new task %d", ups, err, u2)
	}
	wantStates(t, s, "F", map[int64]storage.State{f: storage.StateBlocked})
	if ups, err := s.Upstream(ctx, f); err != nil || len(ups) != 1 || ups[0].TaskID != d2 {
		t.Fatalf("upstream of F: %+v, %v; want D's new task %d", ups, err, d2)
	}
	if err := s.Finish(ctx, success(claimOnly(t, s, 400, u2)[0]), 400); err != nil {
		t.Fatal(err)
	}
	claimOnly(t, s, 500) // D2 is due, but E still holds k
	if err := s.Finish(ctx, success(eRow), 600); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, success(claimOnly(t, s, 700, d2)[0]), 700); err != nil {
		t.Fatal(err)
	}
	claimOnly(t, s, 800, f)
}
