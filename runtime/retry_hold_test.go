package runtime

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testwait"
)

// onceFailing is a task whose first attempt fails; it records when each
// attempt started.
type onceFailing struct {
	mu     sync.Mutex
	starts map[int]time.Time
	def    *TaskDef
}

func newOnceFailing(name string, delay time.Duration) *onceFailing {
	f := &onceFailing{starts: map[int]time.Time{}}
	f.def = &TaskDef{Name: name, Policy: RetryPolicy{MaxAttempts: 3, Backoff: BackoffFixed, Initial: delay, Jitter: Jitter{Kind: JitterNone}},
		Run: func(ctx context.Context, args []byte) error {
			_, attempt, _ := AttemptFrom(ctx)
			f.mu.Lock()
			f.starts[attempt] = time.Now()
			f.mu.Unlock()
			if attempt == 1 {
				return errors.New("first attempt fails")
			}
			return nil
		}}
	return f
}

func (f *onceFailing) start(attempt int) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starts[attempt]
}

// A retry due within RetryHold stays leased by its instance while it waits,
// and starts at its due time, not before.
func TestHeldRetryRunsOnTime(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig(dsn)
		cfg.PollInterval = time.Hour // the poll is no help here
		rt := startRuntime(t, cfg)
		const delay = 400 * time.Millisecond
		f := newOnceFailing("held", delay)
		if err := rt.Register(f.def); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		id, err := rt.Submit(ctx, Call{Task: f.def, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		var held *Task
		testwait.Until(5*time.Second, func() bool {
			task, err := rt.store.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if task.State == StateRetrying {
				held = task
			}
			return held != nil
		})
		if held == nil {
			t.Fatal("the first attempt's failure was not recorded")
		}
		if held.LeaseOwner != rt.InstanceID() || held.LeaseUntil < held.ExecuteTime+Millis(cfg.LeaseDuration.Milliseconds()) {
			t.Fatalf("waiting retry: owner %q lease_until %d due %d, want held by %s until due+LeaseDuration", held.LeaseOwner, held.LeaseUntil, held.ExecuteTime, rt.InstanceID())
		}
		// Another instance's claim does not take it while held.
		if got, err := rt.store.ClaimDue(ctx, "other", held.ExecuteTime+1, held.ExecuteTime+1000, 10, []string{"held"}, nil); err != nil || len(got) != 0 {
			t.Fatalf("claim of a held retry: %d tasks, %v", len(got), err)
		}
		done := waitState(t, rt, id, StateSucceeded, 10*time.Second)
		if done.ExecuteTimes != 2 {
			t.Fatalf("execute_times %d, want 2", done.ExecuteTimes)
		}
		// Due times are on the database's clock, re-read at every heartbeat
		// (clock.go) to within half a round trip, while f.start reads this
		// process's clock: allow the reading's error, not a real early start.
		late := f.start(2).Sub(f.start(1).Add(delay))
		if late < -2*time.Millisecond || late > 200*time.Millisecond {
			t.Fatalf("second attempt started %v after its due time, want within [-2ms, 200ms)", late)
		}
	})
}

// Stop gives held retries back: any instance runs them when due.
func TestHeldRetryGivenBackAtStop(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		cfg := testConfig(dsn)
		rt1 := startRuntime(t, cfg)
		f := newOnceFailing("handover", 700*time.Millisecond)
		if err := rt1.Register(f.def); err != nil {
			t.Fatal(err)
		}
		id, err := rt1.Submit(ctx, Call{Task: f.def, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, rt1, id, StateRetrying, 5*time.Second)
		if err := rt1.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		db, dialect, err := OpenDB(dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		task, err := NewInspector(db, dialect).Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if task.State != StateRetrying || task.LeaseOwner != "" || task.LeaseUntil != 0 || task.ExecuteTimes != 1 {
			t.Fatalf("after Stop: %s owner %q lease_until %d execute_times %d, want retrying, no owner", task.State, task.LeaseOwner, task.LeaseUntil, task.ExecuteTimes)
		}
		cfg.InstanceID = "second"
		rt2 := startRuntime(t, cfg)
		if err := rt2.Register(f.def); err != nil {
			t.Fatal(err)
		}
		done := waitState(t, rt2, id, StateSucceeded, 10*time.Second)
		if done.ExecuteTimes != 2 || f.start(2).Before(f.start(1).Add(700*time.Millisecond)) {
			t.Fatalf("execute_times %d, second attempt %v after the first, want 2 and ≥ 700ms", done.ExecuteTimes, f.start(2).Sub(f.start(1)))
		}
	})
}

// A retry held by an instance that crashed is claimed once its hold runs
// out, not before.
func TestHeldRetryOfCrashedInstance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfig(dsn))
		var ran sync.Map
		def := &TaskDef{Name: "orphan-held", Policy: fastPolicy(3), Run: func(ctx context.Context, args []byte) error {
			ran.Store("at", time.Now())
			return nil
		}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		holdUntil := now.Add(1500 * time.Millisecond)
		task := sampleTask("orphan-held", StateRetrying, toMillis(now), 0)
		task.ShardKey = rt.shardFor("")
		task.ExecuteTimes, task.LeaseOwner, task.LeaseUntil = 1, "crashed-instance", toMillis(holdUntil)
		mustInsert(t, rt.store, task)
		rt.poke()
		done := waitState(t, rt, task.ID, StateSucceeded, 10*time.Second)
		at, _ := ran.Load("at")
		if at.(time.Time).Before(holdUntil) {
			t.Fatalf("ran %v before the hold ran out", holdUntil.Sub(at.(time.Time)))
		}
		if done.ExecuteTimes != 2 {
			t.Fatalf("execute_times %d, want 2", done.ExecuteTimes)
		}
	})
}

// With RetryHold negative, a waiting retry has no owner.
func TestRetryHoldDisabled(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig(dsn)
		cfg.RetryHold = -1
		rt := startRuntime(t, cfg)
		f := newOnceFailing("unheld", 300*time.Millisecond)
		if err := rt.Register(f.def); err != nil {
			t.Fatal(err)
		}
		id, err := rt.Submit(context.Background(), Call{Task: f.def, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		task := waitState(t, rt, id, StateRetrying, 5*time.Second)
		if task.LeaseOwner != "" || task.LeaseUntil != 0 {
			t.Fatalf("waiting retry with RetryHold < 0: owner %q lease_until %d, want none", task.LeaseOwner, task.LeaseUntil)
		}
		waitState(t, rt, id, StateSucceeded, 10*time.Second)
	})
}

// Many retries falling due together each start once, on time.
func TestHeldRetriesBurst(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig(dsn)
		cfg.Workers = 4 // fewer workers than retries due at once
		rt := startRuntime(t, cfg)
		var mu sync.Mutex
		starts := map[int64][]int{}
		def := &TaskDef{Name: "burst", Policy: RetryPolicy{MaxAttempts: 3, Backoff: BackoffFixed, Initial: 300 * time.Millisecond, Jitter: Jitter{Kind: JitterNone}},
			Run: func(ctx context.Context, args []byte) error {
				id, attempt, _ := AttemptFrom(ctx)
				mu.Lock()
				starts[id] = append(starts[id], attempt)
				mu.Unlock()
				if attempt == 1 {
					return errors.New("first attempt fails")
				}
				return nil
			}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		const n = 200
		ids := make([]int64, n)
		for i := range ids {
			id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = id
		}
		for _, id := range ids {
			waitState(t, rt, id, StateSucceeded, 30*time.Second)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			if got := starts[id]; len(got) != 2 || got[0] != 1 || got[1] != 2 {
				t.Fatalf("task %d attempts started %v, want [1 2]", id, got)
			}
		}
	})
}
