package maintenance

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// finishedTask is a row in state, last modified at modified.
func finishedTask(name string, state storage.State, modified time.Time) *storage.Task {
	t := sampleTask(name, state, storage.ToMillis(modified))
	t.ExecuteTimes = 1
	return t
}

// The purger deletes finished rows past retention, in batches, and keeps
// fresh ones and unfinished ones however old; it runs only while it may
// (Leading).
func TestPurgerDeletesPastRetention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		old := time.Now().Add(-2 * time.Hour)
		var gone, kept []*storage.Task
		for range 5 {
			gone = append(gone, finishedTask("old", storage.StateSucceeded, old))
		}
		gone = append(gone, finishedTask("old", storage.StateRecovered, old), finishedTask("old", storage.StateDiscarded, old))
		kept = append(kept, finishedTask("fresh", storage.StateSucceeded, time.Now()), finishedTask("old", storage.StateDead, old), finishedTask("old", storage.StatePending, old))
		mustInsert(t, st, append(gone, kept...)...)
		var logs logBuffer
		var may atomic.Bool
		var asked atomic.Int32
		p := NewPurger(st, PurgerConfig{Retention: time.Hour, Batch: 2, CheckInterval: 5 * time.Millisecond, Logger: logs.logger(),
			Leading: func() bool { asked.Add(1); return may.Load() }})
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer p.Stop(context.Background())
		waitFor(t, 5*time.Second, "the purger to ask 5 times", func() bool { return asked.Load() >= 5 })
		if _, err := st.Get(context.Background(), gone[0].ID); err != nil {
			t.Fatalf("purged without leave: %v", err)
		}
		may.Store(true)
		p.Wake()
		waitFor(t, 5*time.Second, "the purge", func() bool { return len(logs.lines("purged finished tasks")) == 1 })
		if err := p.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		checkNoServiceGoroutines(t)
		for _, task := range gone {
			if _, err := st.Get(context.Background(), task.ID); err == nil {
				t.Errorf("task %d (%s, old) not purged", task.ID, task.State)
			}
		}
		for _, task := range kept {
			if _, err := st.Get(context.Background(), task.ID); err != nil {
				t.Errorf("task %d (%s) purged: %v", task.ID, task.State, err)
			}
		}
		if line := logs.lines("purged finished tasks")[0]; !contains(line, "rows=7") {
			t.Fatalf("purge line %q, want rows=7", line)
		}
	})
}

// With Retention zero or less the purger does not run at all.
func TestPurgerDisabledWithoutRetention(t *testing.T) {
	p := NewPurger(nil, PurgerConfig{})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := mainGoroutines(); n != 0 {
		t.Fatalf("%d goroutines for a purger without retention", n)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Stop returns within its context while the purger is stuck asking whether
// it may run.
func TestPurgerStopBoundedByContext(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		stuck, g := make(chan struct{}, 1), newGate()
		p := NewPurger(st, PurgerConfig{Retention: time.Hour, CheckInterval: 5 * time.Millisecond,
			Leading: func() bool { stuck <- struct{}{}; g.wait(); return false }})
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		receive(t, stuck, "the purger to ask whether it may run")
		checkStopBounded(t, p, g.open)
	})
}
