package maintenance

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
)

// leasedTask is a row leased by owner until until, at attempt times.
func leasedTask(name string, state storage.State, owner string, times int, until time.Time) *storage.Task {
	t := sampleTask(name, state, storage.ToMillis(until.Add(-time.Minute)))
	t.ExecuteTimes, t.LeaseOwner, t.LeaseUntil = times, owner, storage.ToMillis(until)
	return t
}

// threeAttempts is the policy the tests' rescuer looks up.
func threeAttempts(*storage.Task) argotype.RetryPolicy {
	return argotype.RetryPolicy{MaxAttempts: 3, Backoff: argotype.BackoffFixed, Initial: time.Minute}
}

// rescueLog records the rescues a rescuer reports.
type rescueLog struct {
	mu  sync.Mutex
	ids map[int64]time.Time
}

func (l *rescueLog) rescued(t *storage.Task, _ storage.Finishing) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ids == nil {
		l.ids = map[int64]time.Time{}
	}
	l.ids[t.ID] = time.Now()
}

func (l *rescueLog) at(id int64) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.ids[id]
	return at, ok
}

// The rescuer takes back expired leases per the task's policy (a retry, or
// exhausted when no attempt is left; a fallback back to exhausted),
// records the attempt as lease_expired, and leaves live leases alone.
func TestRescuerTakesBackExpiredLeases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		now := time.Now()
		retry := leasedTask("retry", storage.StateRunning, "gone", 1, now.Add(-time.Second))
		last := leasedTask("last", storage.StateRunning, "gone", 3, now.Add(-time.Second))
		fallback := leasedTask("fallback", storage.StateFallingBack, "gone", 3, now.Add(-time.Second))
		live := leasedTask("live", storage.StateRunning, "alive", 1, now.Add(time.Hour))
		mustInsert(t, st, retry, last, fallback, live)
		var log rescueLog
		r := NewRescuer(st, RescuerConfig{Interval: 10 * time.Millisecond, Policy: threeAttempts, Rescued: log.rescued})
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer r.Stop(context.Background())
		for _, task := range []*storage.Task{retry, last, fallback} {
			waitFor(t, 5*time.Second, "the rescue of "+task.Name, func() bool { _, ok := log.at(task.ID); return ok })
		}
		if err := r.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		checkNoServiceGoroutines(t)
		for _, c := range []struct {
			task *storage.Task
			to   storage.State
			kind string
		}{{retry, storage.StateRetrying, "attempt"}, {last, storage.StateExhausted, "attempt"}, {fallback, storage.StateExhausted, "fallback"}} {
			got := mustGet(t, st, c.task.ID)
			if got.State != c.to || got.LeaseOwner != "" {
				t.Errorf("%s: %s owner %q, want %s and no owner", c.task.Name, got.State, got.LeaseOwner, c.to)
			}
			atts, err := st.Attempts(context.Background(), c.task.ID)
			if err != nil || len(atts) != 1 || atts[0].Outcome != argotype.OutcomeLeaseExpired || atts[0].Kind != c.kind || atts[0].Worker != "gone" {
				t.Errorf("%s: history %+v, %v; want one %s lease_expired by gone", c.task.Name, atts, err, c.kind)
			}
		}
		if got := mustGet(t, st, retry.ID); got.ExecuteTime.Time().Before(now.Add(50 * time.Second)) {
			t.Errorf("retry due at %s, want a minute after the rescue (the policy's backoff)", got.ExecuteTime.Time())
		}
		if got := mustGet(t, st, live.ID); got.State != storage.StateRunning || got.LeaseOwner != "alive" {
			t.Errorf("a live lease was rescued: %s owner %q", got.State, got.LeaseOwner)
		}
	})
}

// The settle rule: after an outage long enough to lapse leases, nothing is
// rescued until the database has answered for Settle, so that live
// instances renew first; while the database is down nothing is rescued.
func TestRescuerWaitsForTheDatabaseToSettle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		const settle = 600 * time.Millisecond
		expired := leasedTask("expired", storage.StateRunning, "gone", 1, time.Now().Add(-time.Second))
		mustInsert(t, st, expired)
		var up atomic.Bool
		var looks atomic.Int32
		var upAt atomic.Pointer[time.Time]
		upSince := func() (bool, time.Time) {
			looks.Add(1)
			if !up.Load() {
				return false, time.Time{}
			}
			return true, *upAt.Load()
		}
		var log rescueLog
		r := NewRescuer(st, RescuerConfig{Interval: 5 * time.Millisecond, Settle: settle, UpSince: upSince, Policy: threeAttempts, Rescued: log.rescued})
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer r.Stop(context.Background())
		// Down: the rescuer looks, and rescues nothing.
		waitFor(t, 5*time.Second, "the rescuer to look 5 times while the database is down", func() bool { return looks.Load() >= 5 })
		if _, ok := log.at(expired.ID); ok {
			t.Fatal("rescued while the database was down")
		}
		if r.Settled() {
			t.Fatal("Settled while the database is down")
		}
		// Up again after an outage that lapsed leases: wait Settle.
		now := time.Now()
		upAt.Store(&now)
		up.Store(true)
		waitFor(t, 10*time.Second, "the rescue once the database has settled", func() bool { _, ok := log.at(expired.ID); return ok })
		at, _ := log.at(expired.ID)
		if waited := at.Sub(now); waited < settle {
			t.Fatalf("rescued %s after the database came back, want %s at least", waited, settle)
		} else {
			t.Logf("rescued %s after the database came back (settle %s)", waited.Round(time.Millisecond), settle)
		}
		if !r.Settled() {
			t.Fatal("not Settled after the rescue")
		}
	})
}

// An outage that begins and ends between the loop's look at the database
// and the rescue's read (the read may even have waited through it) leaves
// leases that only missed their renewals: the rescuer asks again before each
// write, and rescues nothing until the database has settled.
func TestRescuerAsksAgainBeforeEachRescue(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		expired := leasedTask("expired", storage.StateRunning, "gone", 1, time.Now().Add(-time.Second))
		mustInsert(t, st, expired)
		var looks atomic.Int32
		upSince := func() (bool, time.Time) {
			if looks.Add(1) == 1 {
				return true, time.Time{} // the loop's look: no outage yet
			}
			return true, time.Now() // every later look: it has just ended
		}
		var log rescueLog
		r := NewRescuer(st, RescuerConfig{Interval: 5 * time.Millisecond, Settle: time.Hour, UpSince: upSince, Policy: threeAttempts, Rescued: log.rescued})
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer r.Stop(context.Background())
		waitFor(t, 5*time.Second, "the rescuer to look 5 times", func() bool { return looks.Load() >= 5 })
		if err := r.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, ok := log.at(expired.ID); ok {
			t.Fatal("rescued a lease read right after an outage, before the database settled")
		}
		if got := mustGet(t, st, expired.ID); got.State != storage.StateRunning || got.LeaseOwner != "gone" {
			t.Fatalf("the lease was taken back: %s owner %q", got.State, got.LeaseOwner)
		}
	})
}

// Nothing is rescued while this instance does not hold the maintenance role.
func TestRescuerOnlyWhileLeading(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		expired := leasedTask("expired", storage.StateRunning, "gone", 1, time.Now().Add(-time.Second))
		mustInsert(t, st, expired)
		var leading atomic.Bool
		var asked atomic.Int32
		var log rescueLog
		r := NewRescuer(st, RescuerConfig{Interval: 5 * time.Millisecond, Policy: threeAttempts, Rescued: log.rescued,
			Leading: func() bool { asked.Add(1); return leading.Load() }})
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer r.Stop(context.Background())
		waitFor(t, 5*time.Second, "the rescuer to ask 5 times", func() bool { return asked.Load() >= 5 })
		if _, ok := log.at(expired.ID); ok {
			t.Fatal("rescued without the role")
		}
		leading.Store(true)
		r.Wake()
		waitFor(t, 5*time.Second, "the rescue once leading", func() bool { _, ok := log.at(expired.ID); return ok })
	})
}

// Stop returns within its context while a rescue is stuck in its callback.
func TestRescuerStopBoundedByContext(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		mustInsert(t, st, leasedTask("expired", storage.StateRunning, "gone", 1, time.Now().Add(-time.Second)))
		stuck, g := make(chan struct{}, 1), newGate()
		r := NewRescuer(st, RescuerConfig{Interval: 5 * time.Millisecond, Policy: threeAttempts,
			Rescued: func(*storage.Task, storage.Finishing) { stuck <- struct{}{}; g.wait() }})
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-stuck:
		case <-time.After(5 * time.Second):
			t.Fatal("no rescue within 5s")
		}
		checkStopBounded(t, r, g.open)
	})
}
