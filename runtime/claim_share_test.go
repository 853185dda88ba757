package runtime

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A held retry that is due but cannot be started (every start writer busy,
// as when start writes hang in an outage) keeps one worker for itself; the
// poller keeps claiming with the other workers, not with that one.
func TestPollerClaimsBesideStuckHolds(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfigT(t, dsn)
		cfg.Workers = 4
		rt := startRuntime(t, cfg)
		// Every start writer taken: due holds stay in the queue.
		release := rt.holds.TakeStartWriters()
		t.Cleanup(release)

		held := newOnceFailing("stuck.held", 10*time.Millisecond)
		gate := make(chan struct{})
		var running, ran atomic.Int32
		later := &TaskDef{Name: "stuck.later", Policy: fastPolicy(1), Run: func(ctx context.Context, _ []byte) error {
			running.Add(1)
			defer running.Add(-1)
			select {
			case <-gate:
			case <-ctx.Done():
			}
			ran.Add(1)
			return nil
		}}
		for _, def := range []*TaskDef{held.def, later} {
			if err := rt.Register(def); err != nil {
				t.Fatal(err)
			}
		}
		ctx := context.Background()
		heldID, err := rt.Submit(ctx, Call{Task: held.def, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the first attempt's retry to be held and due", func() bool {
			return rt.holds.AnyDue(rt.now())
		})
		// Due a little later: only the poller can start them.
		const laters = 4
		var ids []int64
		for range laters {
			id, err := rt.Submit(ctx, Call{Task: later, Args: []byte(`{}`), RunAt: time.Now().Add(50 * time.Millisecond)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		waitFor(t, 10*time.Second, "the poller to run 3 tasks beside the held retry", func() bool { return running.Load() >= 3 })
		// The held retry keeps its worker: over 15 poll intervals, the
		// poller does not take the fourth.
		time.Sleep(15 * cfg.PollInterval)
		if n := running.Load(); n != 3 {
			t.Fatalf("%d tasks running with 4 workers and a held retry due: the poller took the held retry's worker", n)
		}
		if !rt.holds.AnyDue(rt.now()) {
			t.Fatal("the held retry left the queue while every start writer was busy: the test did not test anything")
		}
		close(gate)
		for _, id := range ids {
			waitState(t, rt, id, StateSucceeded, 10*time.Second)
		}
		release()
		task := waitState(t, rt, heldID, StateSucceeded, 10*time.Second)
		if task.ExecuteTimes != 2 {
			t.Fatalf("held task succeeded at attempt %d, want 2", task.ExecuteTimes)
		}
	})
}
