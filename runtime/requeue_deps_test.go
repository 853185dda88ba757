package runtime

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestRequeueKeepsDependencies: a task discarded while blocked, requeued
// while its upstream task still runs, waits for it (before the fix it was
// written pending, without its edge, and ran while the upstream task ran);
// and a bulk requeue of a dead upstream task and of a task discarded while
// it waited for it requeues the upstream task first, so the other's new
// task runs after the upstream's new task.
func TestRequeueKeepsDependencies(t *testing.T) {
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		rt := startRuntime(t, testConfig(dsn))
		in := rt.Inspector()
		in.SingleOperatorDiscard = true
		release := make(chan struct{})
		var mu sync.Mutex
		var events []string
		upDone := false
		log := func(e string) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, e)
		}
		has := func(e string) func() bool {
			return func() bool {
				mu.Lock()
				defer mu.Unlock()
				return slices.Contains(events, e)
			}
		}
		failUp := true
		up := &TaskDef{Name: "reqdeps.up", Policy: fastPolicy(1), Run: func(ctx context.Context, raw []byte) error {
			log("up " + string(raw))
			if string(raw) == `"slow"` {
				<-release
			}
			mu.Lock()
			defer mu.Unlock()
			if string(raw) == `"flaky"` && failUp {
				failUp = false
				return errors.New("upstream failed")
			}
			upDone = true
			events = append(events, "up done "+string(raw))
			return nil
		}}
		down := &TaskDef{Name: "reqdeps.down", Policy: fastPolicy(1), Run: func(ctx context.Context, raw []byte) error {
			mu.Lock()
			defer mu.Unlock()
			if !upDone {
				t.Errorf("down %s started before its upstream task succeeded", raw)
			}
			events = append(events, "down "+string(raw))
			return nil
		}}
		if err := rt.Register(up, down); err != nil {
			t.Fatal(err)
		}
		upID, err := rt.Submit(ctx, Call{Task: up, Args: []byte(`"slow"`)})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "the upstream task to start", has(`up "slow"`))
		downID, err := rt.Submit(ctx, Call{Task: down, Args: []byte(`"one"`), After: []int64{upID}})
		if err != nil {
			t.Fatal(err)
		}
		if err := in.Discard(ctx, downID, "not now"); err != nil {
			t.Fatal(err)
		}
		again, err := in.RequeueAsNew(ctx, downID, "wanted after all")
		if err != nil {
			t.Fatal(err)
		}
		if row, err := in.Get(ctx, again); err != nil || row.State != StateBlocked {
			t.Fatalf("requeued task %d while its upstream task runs: %+v, %v; want blocked", again, row, err)
		}
		close(release)
		waitFor(t, 30*time.Second, "the requeued task to run after its upstream task", has(`down "one"`))

		// Bulk: U fails (dead), D was discarded while it waited for U.
		mu.Lock()
		upDone = false
		mu.Unlock()
		u, err := rt.Submit(ctx, Call{Task: up, Args: []byte(`"flaky"`), RunAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		d, err := rt.Submit(ctx, Call{Task: down, Args: []byte(`"two"`), After: []int64{u}})
		if err != nil {
			t.Fatal(err)
		}
		if err := in.Discard(ctx, d, "not now"); err != nil {
			t.Fatal(err)
		}
		if err := in.RunNow(ctx, u, "test"); err != nil {
			t.Fatal(err)
		}
		waitState(t, rt, u, StateDead, 30*time.Second)
		n, err := in.RequeueWhere(ctx, Filter{IDs: []int64{d, u}}, false)
		if err != nil || n != 2 {
			t.Fatalf("bulk requeue: %d, %v; want 2", n, err)
		}
		waitFor(t, 30*time.Second, "the bulk-requeued task to run after the new upstream task", has(`down "two"`))
	})
}
