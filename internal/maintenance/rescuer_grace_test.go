package maintenance

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// passCounter counts the rescuer's looks for expired leases.
type passCounter struct {
	rescueStore
	passes atomic.Int64
}

func (p *passCounter) ExpiredLeases(ctx context.Context, now storage.Millis, limit int) ([]*storage.Task, error) {
	defer p.passes.Add(1)
	return p.rescueStore.ExpiredLeases(ctx, now, limit)
}

// A lease is taken back only Grace after it ended on the database's clock:
// the instance that held it, cut off, has stopped its function by then.
func TestRescuerWaitsGraceAfterLeaseEnd(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		const grace = 5 * time.Second
		ended := time.Now().Truncate(time.Millisecond)
		task := leasedTask("cut-off", storage.StateRunning, "cut-off", 1, ended)
		mustInsert(t, st, task)
		var clock atomic.Int64 // the database's time, as the rescuer reads it
		clock.Store(int64(grace - 100*time.Millisecond))
		store := &passCounter{rescueStore: st}
		var log rescueLog
		r := NewRescuer(store, RescuerConfig{Interval: 10 * time.Millisecond, Grace: grace, Policy: threeAttempts, Rescued: log.rescued,
			Now: func() time.Time { return ended.Add(time.Duration(clock.Load())) }})
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer r.Stop(context.Background())
		waitFor(t, 5*time.Second, "three looks for expired leases", func() bool { return store.passes.Load() >= 3 })
		if _, ok := log.at(task.ID); ok {
			t.Fatalf("a lease that ended %s ago was rescued, want it left for Grace (%s)", grace-100*time.Millisecond, grace)
		}
		clock.Store(int64(grace + 100*time.Millisecond))
		waitFor(t, 5*time.Second, "the rescue of a lease that ended more than Grace ago", func() bool { _, ok := log.at(task.ID); return ok })
	})
}
