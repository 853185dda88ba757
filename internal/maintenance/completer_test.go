package maintenance

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// gatedStore is the real store with its first completer write held at a
// gate (so that finishes queue behind it), counting the writes.
type gatedStore struct {
	*storage.Store
	first          sync.Once
	gate           *gate
	entered        chan struct{}
	singles, batch atomic.Int32
	batched        atomic.Int32 // finishes written in batches
}

func newGatedStore(st *storage.Store) *gatedStore {
	return &gatedStore{Store: st, gate: newGate(), entered: make(chan struct{})}
}

func (g *gatedStore) hold() {
	g.first.Do(func() { close(g.entered); g.gate.wait() })
}

func (g *gatedStore) Finish(ctx context.Context, f storage.Finishing, now storage.Millis) error {
	g.hold()
	g.singles.Add(1)
	return g.Store.Finish(ctx, f, now)
}

func (g *gatedStore) FinishBatch(ctx context.Context, fs []storage.Finishing, now storage.Millis) ([]error, error) {
	g.hold()
	g.batch.Add(1)
	g.batched.Add(int32(len(fs)))
	return g.Store.FinishBatch(ctx, fs, now)
}

// runningTasks inserts n tasks running under a lease of "me".
func runningTasks(t *testing.T, st *storage.Store, n int) []*storage.Task {
	t.Helper()
	var out []*storage.Task
	for range n {
		task := leasedTask("done", storage.StateRunning, "me", 1, time.Now().Add(time.Minute))
		mustInsert(t, st, task)
		out = append(out, task)
	}
	return out
}

func succeeded(task *storage.Task) storage.Finishing {
	empty := ""
	return storage.Finishing{Fence: storage.Fence{ID: task.ID, Shard: task.ShardKey, Owner: task.LeaseOwner, Attempt: task.ExecuteTimes, From: storage.StateRunning},
		To: storage.StateSucceeded, Due: task.ExecuteTime, ErrMsg: &empty}
}

// finishAll finishes every task on its own goroutine; the results arrive on
// the returned channel.
func finishAll(c *Completer, tasks []*storage.Task) <-chan error {
	out := make(chan error, len(tasks))
	for _, task := range tasks {
		go func() { out <- c.Finish(succeeded(task)) }()
	}
	return out
}

func checkSucceeded(t *testing.T, st *storage.Store, tasks []*storage.Task) {
	t.Helper()
	for _, task := range tasks {
		if row := mustGet(t, st, task.ID); row.State != storage.StateSucceeded {
			t.Fatalf("task %d %s, want succeeded", task.ID, row.State)
		}
	}
}

// Finishes that arrive while a write is under way are written together in
// one transaction, and each caller gets its own outcome; Stop writes what
// is queued before it returns; a finish after Stop is written on its own.
func TestCompleterBatchesAndDrains(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		g := newGatedStore(st)
		c := NewCompleter(g, CompleterConfig{})
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		tasks := runningTasks(t, st, 41)
		first := finishAll(c, tasks[:1])
		select {
		case <-g.entered:
		case <-time.After(5 * time.Second):
			t.Fatal("the first finish was not written within 5s")
		}
		rest := finishAll(c, tasks[1:40])
		waitFor(t, 5*time.Second, "39 finishes queued behind the first", func() bool { return len(c.reqs) == 39 })
		stopped := make(chan error, 1)
		go func() { stopped <- c.Stop(context.Background()) }()
		g.gate.open()
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		checkNoServiceGoroutines(t)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		for range 39 {
			if err := <-rest; err != nil {
				t.Fatal(err)
			}
		}
		if g.singles.Load() != 1 || g.batch.Load() != 1 || g.batched.Load() != 39 {
			t.Fatalf("%d single writes, %d batches of %d finishes; want the first alone, then one batch of 39", g.singles.Load(), g.batch.Load(), g.batched.Load())
		}
		if err := c.Finish(succeeded(tasks[40])); err != nil {
			t.Fatal(err)
		}
		if g.singles.Load() != 2 || g.batch.Load() != 1 {
			t.Fatal("a finish after Stop was not written on its own")
		}
		checkSucceeded(t, st, tasks)
		// Its fence refuses a second finish of the same attempt.
		if err := c.Finish(succeeded(tasks[0])); err == nil {
			t.Fatal("a second finish of the same attempt was accepted")
		}
	})
}

// Stop returns within its context while a write hangs; the write and the
// drain finish afterwards.
func TestCompleterStopBoundedByContext(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		g := newGatedStore(st)
		c := NewCompleter(g, CompleterConfig{})
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		tasks := runningTasks(t, st, 3)
		done := finishAll(c, tasks)
		select {
		case <-g.entered:
		case <-time.After(5 * time.Second):
			t.Fatal("no write within 5s")
		}
		checkStopBounded(t, c, g.gate.open)
		for range tasks {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		checkSucceeded(t, st, tasks)
	})
}
