package maintenance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
)

// RescuerConfig.Next decides a rescued attempt's retry in place of the
// policy (the runtime's retry strategies): one task it stops though the
// policy has attempts left, another it retries after its own delay; it is
// given the task, its policy and the rescue's message.
func TestRescuerNextDecides(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		now := time.Now()
		stop := leasedTask("stop", storage.StateRunning, "gone", 1, now.Add(-time.Second))
		later := leasedTask("later", storage.StateRunning, "gone", 1, now.Add(-time.Second))
		mustInsert(t, st, stop, later)
		var log rescueLog
		next := func(task *storage.Task, pol argotype.RetryPolicy, msg string) (time.Duration, bool) {
			if pol.MaxAttempts != 3 || !strings.Contains(msg, "lease of instance gone expired") {
				t.Errorf("Next got policy %+v, message %q", pol, msg)
			}
			return 3 * time.Hour, task.Name != "stop"
		}
		r := NewRescuer(st, RescuerConfig{Interval: 10 * time.Millisecond, Policy: threeAttempts, Next: next, Rescued: log.rescued})
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer r.Stop(context.Background())
		for _, task := range []*storage.Task{stop, later} {
			waitFor(t, 5*time.Second, "the rescue of "+task.Name, func() bool { _, ok := log.at(task.ID); return ok })
		}
		if err := r.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := mustGet(t, st, stop.ID); got.State != storage.StateExhausted {
			t.Errorf("stop: %s, want exhausted (Next said stop; the policy had 2 attempts left)", got.State)
		}
		got := mustGet(t, st, later.ID)
		if got.State != storage.StateRetrying || got.ExecuteTime.Time().Before(now.Add(170*time.Minute)) {
			t.Errorf("later: %s due %s, want retrying about 3 h after the rescue (Next's delay, not the policy's minute)", got.State, got.ExecuteTime.Time())
		}
	})
}

// The policy counts attempts without the deferred ones (RetryAfter): a
// task at attempt 3 of a 3-attempt policy, two of them deferred, whose
// lease expired is at its policy's first attempt and is retried, not
// exhausted.
func TestRescuerLeavesDeferredAttemptsUncounted(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		now := time.Now()
		task := leasedTask("deferred", storage.StateRunning, "gone", 3, now.Add(-time.Second))
		mustInsert(t, st, task)
		if _, err := st.DB().Exec("UPDATE argo_task SET deferred_times = 2 WHERE id = ?", task.ID); err != nil {
			t.Fatal(err)
		}
		var log rescueLog
		r := NewRescuer(st, RescuerConfig{Interval: 10 * time.Millisecond, Policy: threeAttempts, Rescued: log.rescued})
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer r.Stop(context.Background())
		waitFor(t, 5*time.Second, "the rescue", func() bool { _, ok := log.at(task.ID); return ok })
		if err := r.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := mustGet(t, st, task.ID); got.State != storage.StateRetrying || got.ExecuteTimes != 3 || got.DeferredTimes != 2 {
			t.Errorf("rescued: %s at attempt %d with %d deferred, want retrying (its policy's attempt 1 of 3 failed)", got.State, got.ExecuteTimes, got.DeferredTimes)
		}
	})
}
