package maintenance

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// The blocked sweeper settles dependent tasks whose release was lost (the
// rows put by hand in the state a lost step leaves: the upstream task
// succeeded, its edge settled or not, the downstream task blocked), in
// batches of one over several passes, only while it may run (Leading); it
// leaves a task whose upstream task is still running, and one modified
// within Grace.
func TestBlockedSweeperSettlesLostReleases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		ctx := context.Background()
		old := storage.ToMillis(time.Now().Add(-time.Hour))
		dependent := func(settled bool, upState storage.State, modified storage.Millis) (up, down int64) {
			t.Helper()
			g := []storage.DependentTask{{Task: sampleTask("u", storage.StatePending, old)}, {Task: sampleTask("d", storage.StatePending, old), AfterCalls: []int{0}}}
			if err := st.InsertDependent(ctx, g, old); err != nil {
				t.Fatal(err)
			}
			up, down = g[0].Task.ID, g[1].Task.ID
			exec(t, st, "UPDATE argo_task SET task_status = ? WHERE id = ?", upState, up)
			exec(t, st, "UPDATE argo_task SET gmt_modified = ? WHERE id = ?", modified, down)
			if settled {
				exec(t, st, "UPDATE argo_task_dep SET upstream_outcome = ? WHERE task_pk = ?", storage.UpstreamSucceeded, down)
			}
			return up, down
		}
		var lost []int64
		for i := range 3 {
			_, d := dependent(i%2 == 0, storage.StateSucceeded, old)
			lost = append(lost, d)
		}
		_, waiting := dependent(false, storage.StateRunning, old)
		_, fresh := dependent(true, storage.StateSucceeded, storage.ToMillis(time.Now().Add(time.Hour)))

		var logs logBuffer
		var may atomic.Bool
		var asked atomic.Int32
		b := NewBlockedSweeper(st, BlockedSweeperConfig{Interval: 5 * time.Millisecond, Grace: time.Minute, Batch: 1, Batches: 2,
			Logger: logs.logger(), Leading: func() bool { asked.Add(1); return may.Load() }})
		if err := b.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer b.Stop(ctx)
		waitFor(t, 5*time.Second, "the sweeper to ask 5 times", func() bool { return asked.Load() >= 5 })
		if got := mustGet(t, st, lost[0]).State; got != storage.StateBlocked {
			t.Fatalf("settled without leave: %s", got)
		}
		may.Store(true)
		b.Wake()
		waitFor(t, 10*time.Second, "the lost releases to be settled", func() bool {
			for _, id := range lost {
				if mustGet(t, st, id).State != storage.StatePending {
					return false
				}
			}
			return true
		})
		// Two more passes over every row: the others stay as they are.
		n := asked.Load()
		waitFor(t, 5*time.Second, "more passes", func() bool { return asked.Load() >= n+8 })
		if err := b.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		checkNoServiceGoroutines(t)
		for id, want := range map[int64]storage.State{waiting: storage.StateBlocked, fresh: storage.StateBlocked} {
			if got := mustGet(t, st, id).State; got != want {
				t.Errorf("task %d: %s, want %s", id, got, want)
			}
		}
		if len(logs.lines("lost dependency release")) == 0 {
			t.Errorf("no WARN line for the settled tasks:\n%s", logs.String())
		}
	})
}

// exec runs a statement on st's database or fails the test.
func exec(t *testing.T, st *storage.Store, query string, args ...any) {
	t.Helper()
	if _, err := st.DB().Exec(query, args...); err != nil {
		t.Fatal(err)
	}
}
