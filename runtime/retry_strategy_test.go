package runtime

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// strategyRuntime is a Runtime with only what nextRetry reads.
func strategyRuntime(t *testing.T, name string, s RetryStrategy) *Runtime {
	return &Runtime{cfg: Config{RetryStrategies: map[string]RetryStrategy{name: s}}, log: testLogger(t)}
}

// The strategy's answer is used as given within [0, MaxStrategyDelay]; a
// negative delay is 0 and one above the cap is the cap; a panic leaves the
// decision to the policy; a permanent error and a RetryAfter error do not
// ask the strategy; a task without a strategy follows its policy.
func TestNextRetryStrategyBounds(t *testing.T) {
	pol := RetryPolicy{MaxAttempts: 3, Backoff: BackoffFixed, Initial: 7 * time.Second, Jitter: Jitter{Kind: JitterNone}}
	fail := errors.New("503")
	attempt := func(n int, err error) FailedAttempt {
		return FailedAttempt{TaskID: 1, TaskName: "s", Attempt: n, Err: err, Policy: pol}
	}
	fixed := func(d time.Duration, retry bool) RetryStrategy {
		return RetryStrategyFunc(func(FailedAttempt) (time.Duration, bool) { return d, retry })
	}
	cases := []struct {
		what      string
		strategy  RetryStrategy
		a         FailedAttempt
		permanent bool
		delay     time.Duration
		retry     bool
	}{
		{"as given", fixed(3*time.Second, true), attempt(1, fail), false, 3 * time.Second, true},
		{"past the policy's attempts", fixed(time.Second, true), attempt(9, fail), false, time.Second, true},
		{"stop before the policy would", fixed(time.Second, false), attempt(1, fail), false, 0, false},
		{"negative is 0", fixed(-time.Hour, true), attempt(1, fail), false, 0, true},
		{"huge is capped", fixed(1<<62, true), attempt(1, fail), false, MaxStrategyDelay, true},
		{"panic: the policy decides", RetryStrategyFunc(func(FailedAttempt) (time.Duration, bool) { panic("bug") }), attempt(1, fail), false, 7 * time.Second, true},
		{"panic on the last attempt: the policy stops", RetryStrategyFunc(func(FailedAttempt) (time.Duration, bool) { panic("bug") }), attempt(3, fail), false, 0, false},
		{"permanent: not asked", fixed(time.Second, true), attempt(1, fail), true, 0, false},
		{"RetryAfter: not asked", fixed(time.Second, false), attempt(1, RetryAfter(fail, time.Minute)), false, 0, true},
	}
	for _, c := range cases {
		rt := strategyRuntime(t, "s", c.strategy)
		d, retry := rt.nextRetry(c.a, c.permanent)
		if d != c.delay || retry != c.retry {
			t.Errorf("%s: got %s, %v; want %s, %v", c.what, d, retry, c.delay, c.retry)
		}
	}
	rt := strategyRuntime(t, "other", fixed(time.Second, false))
	if d, retry := rt.nextRetry(attempt(1, fail), false); d != 7*time.Second || !retry {
		t.Errorf("a task without a strategy: %s, %v; want its policy's 7s, true", d, retry)
	}
	// A rescued lease asks the strategy with an error wrapping ErrLeaseExpired.
	var got error
	rt = strategyRuntime(t, "s", RetryStrategyFunc(func(a FailedAttempt) (time.Duration, bool) { got = a.Err; return time.Second, true }))
	if d, retry := rt.rescueNext(&Task{ID: 1, Name: "s", ExecuteTimes: 1}, pol, "lease of instance x expired"); d != time.Second || !retry || !errors.Is(got, ErrLeaseExpired) {
		t.Errorf("rescueNext: %s, %v, strategy saw %v; want 1s, true, ErrLeaseExpired", d, retry, got)
	}
}

// Config.RetryStrategies is checked at Start.
func TestRetryStrategiesValidated(t *testing.T) {
	for _, m := range []map[string]RetryStrategy{{"": RetryStrategyFunc(nil)}, {"x": nil}} {
		if _, err := (Config{DSN: "sqlite:x", RetryStrategies: m}).withDefaults(); err == nil {
			t.Errorf("RetryStrategies %v accepted", m)
		}
	}
}

// On a real database: a strategy keeps a task with a 2-attempt policy going
// for 4 attempts, with the delays it chose (the history's backoff), sees
// each attempt's number and error, and is not asked about a RetryAfter
// call; another strategy stops a 5-attempt task after its first attempt;
// a panicking one leaves the task to its policy (dead after 2 attempts,
// not lost).
func TestRetryStrategyDecides(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		var mu sync.Mutex
		var seen []FailedAttempt
		calls := map[string]int{}
		fail := func(name string) int {
			mu.Lock()
			defer mu.Unlock()
			calls[name]++
			return calls[name]
		}
		longer := &TaskDef{Name: "strategy.longer", Policy: fastPolicy(2), Run: func(ctx context.Context, _ []byte) error {
			switch fail("longer") {
			case 1:
				return RetryAfter(errors.New("429"), 20*time.Millisecond)
			case 5:
				return nil
			}
			return errors.New("503")
		}}
		stopper := &TaskDef{Name: "strategy.stop", Policy: fastPolicy(5), Run: func(ctx context.Context, _ []byte) error {
			fail("stop")
			return errors.New("400 bad request")
		}}
		panicky := &TaskDef{Name: "strategy.panic", Policy: fastPolicy(2), Run: func(ctx context.Context, _ []byte) error {
			fail("panic")
			return errors.New("500")
		}}
		cfg := testConfigT(t, dsn)
		cfg.RetryStrategies = map[string]RetryStrategy{
			longer.Name: RetryStrategyFunc(func(a FailedAttempt) (time.Duration, bool) {
				mu.Lock()
				seen = append(seen, a)
				mu.Unlock()
				return time.Duration(a.Attempt) * 15 * time.Millisecond, a.Attempt < 4
			}),
			stopper.Name: RetryStrategyFunc(func(a FailedAttempt) (time.Duration, bool) { return 0, false }),
			panicky.Name: RetryStrategyFunc(func(a FailedAttempt) (time.Duration, bool) { panic("strategy bug") }),
		}
		rt := startRuntime(t, cfg)
		if err := rt.Register(longer, stopper, panicky); err != nil {
			t.Fatal(err)
		}
		ids := map[string]int64{}
		for _, d := range []*TaskDef{longer, stopper, panicky} {
			id, err := rt.Submit(context.Background(), Call{Task: d, Args: []byte(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			ids[d.Name] = id
		}
		task := waitState(t, rt, ids[longer.Name], StateSucceeded, 10*time.Second)
		if task.ExecuteTimes != 5 || task.DeferredTimes != 1 {
			t.Errorf("longer: succeeded at attempt %d with %d deferred, want 5 and 1 (policy 2; the RetryAfter call numbered, not counted)", task.ExecuteTimes, task.DeferredTimes)
		}
		hist, err := rt.Inspector().Attempts(context.Background(), ids[longer.Name])
		if err != nil {
			t.Fatal(err)
		}
		var backoffs []int64
		for _, a := range hist {
			backoffs = append(backoffs, a.BackoffMs)
		}
		// The RetryAfter call (20 ms), then attempts 1–3 with the strategy's 15, 30, 45 ms, then the success.
		if want := []int64{20, 15, 30, 45, 0}; !slices.Equal(backoffs, want) {
			t.Errorf("longer: backoffs %v, want %v", backoffs, want)
		}
		mu.Lock()
		if len(seen) != 3 || seen[0].Attempt != 1 || seen[2].Attempt != 3 || seen[0].Deferred != 1 || seen[0].Err == nil || seen[0].Err.Error() != "503" || seen[0].Policy.MaxAttempts != 2 || seen[0].TaskID != ids[longer.Name] {
			t.Errorf("the strategy saw %+v; want attempts 1..3 with error 503 and the stored policy (the RetryAfter call not asked nor counted)", seen)
		}
		mu.Unlock()
		task = waitState(t, rt, ids[stopper.Name], StateDead, 10*time.Second)
		if task.ExecuteTimes != 1 {
			t.Errorf("stop: dead after %d attempts, want 1 (the strategy stopped a 5-attempt policy)", task.ExecuteTimes)
		}
		task = waitState(t, rt, ids[panicky.Name], StateDead, 10*time.Second)
		if task.ExecuteTimes != 2 {
			t.Errorf("panic: dead after %d attempts, want the policy's 2", task.ExecuteTimes)
		}
	})
}

// A task whose instance died (its lease expired) is decided by the
// strategy of the maintenance instance: here it stops a 3-attempt task
// after the rescued attempt, so it ends dead at attempt 1.
func TestRetryStrategyDecidesRescue(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfigT(t, dsn)
		cfg.RescueInterval = 50 * time.Millisecond
		var asked sync.Map
		cfg.RetryStrategies = map[string]RetryStrategy{"strategy.rescued": RetryStrategyFunc(func(a FailedAttempt) (time.Duration, bool) {
			asked.Store(a.TaskID, errors.Is(a.Err, ErrLeaseExpired))
			return 0, false
		})}
		rt := startRuntime(t, cfg)
		def := &TaskDef{Name: "strategy.rescued", Policy: fastPolicy(3), Run: func(context.Context, []byte) error { return errors.New("fails") }}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		past := time.Now().Add(-time.Minute)
		task := &Task{Name: def.Name, State: StateRunning, ExecuteTimes: 1, MaxAttempts: 3, ExecuteTime: toMillis(past), Parameter: "{}",
			RetryPolicyJSON: encodePolicy(fastPolicy(3)), LeaseOwner: "died", LeaseUntil: toMillis(past), GmtCreate: toMillis(past), GmtModified: toMillis(past)}
		if err := rt.store.Insert(context.Background(), nil, task); err != nil {
			t.Fatal(err)
		}
		got := waitState(t, rt, task.ID, StateDead, 15*time.Second)
		if got.ExecuteTimes != 1 {
			t.Errorf("dead at attempt %d, want 1 (the strategy stopped at the rescue)", got.ExecuteTimes)
		}
		if v, ok := asked.Load(task.ID); !ok || !v.(bool) {
			t.Errorf("the strategy was asked %v (%v); want once, with an error wrapping ErrLeaseExpired", v, ok)
		}
	})
}
