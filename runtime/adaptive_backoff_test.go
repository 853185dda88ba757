package runtime

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The factor follows the window's failure rate: 1 below MinSamples, the
// maximum when every attempt failed, between as successes come in, and 1
// again once the window has passed; NextRetry scales the policy's delay by
// it, within MaxDelay, and stops where the policy stops.
func TestAdaptiveBackoffFactor(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	b := &AdaptiveBackoff{now: func() time.Time { return now }}
	for range AdaptiveMinSamplesDefault - 1 {
		b.observe(true)
	}
	if f := b.Factor(); f != 1 {
		t.Fatalf("%d failures: factor %v, want 1 (below MinSamples %d)", AdaptiveMinSamplesDefault-1, f, AdaptiveMinSamplesDefault)
	}
	b.observe(true)
	if f := b.Factor(); f != AdaptiveMaxFactorDefault {
		t.Fatalf("%d failures: factor %v, want MaxFactor %v", AdaptiveMinSamplesDefault, f, AdaptiveMaxFactorDefault)
	}
	now = now.Add(AdaptiveWindowDefault / 2)
	for range AdaptiveMinSamplesDefault {
		b.observe(false)
	}
	want := 1 + (AdaptiveMaxFactorDefault-1)*0.5
	if f := b.Factor(); f != want {
		t.Fatalf("half failed: factor %v, want %v", f, want)
	}
	pol := RetryPolicy{MaxAttempts: 3, Backoff: BackoffFixed, Initial: 100 * time.Millisecond, Jitter: Jitter{Kind: JitterNone}}
	if d, ok := b.NextRetry(FailedAttempt{TaskID: 1, Attempt: 1, Policy: pol}); !ok || d != time.Duration(want*float64(100*time.Millisecond)) {
		t.Errorf("NextRetry: %v, %v; want the policy's 100ms × %v", d, ok, want)
	}
	if _, ok := b.NextRetry(FailedAttempt{TaskID: 1, Attempt: 3, Policy: pol}); ok {
		t.Error("NextRetry after the policy's last attempt retried; want the policy's stop")
	}
	capped := &AdaptiveBackoff{MaxFactor: 50, MinSamples: 1, MaxDelay: time.Second, now: func() time.Time { return now }}
	capped.observe(true)
	if d, _ := capped.NextRetry(FailedAttempt{TaskID: 1, Attempt: 1, Policy: pol}); d != time.Second {
		t.Errorf("capped NextRetry: %v, want MaxDelay 1s (100ms × 50 uncapped)", d)
	}
	// The failures leave the window first, then the successes.
	now = now.Add(AdaptiveWindowDefault/2 + AdaptiveWindowDefault/adaptiveBuckets)
	if f := b.Factor(); f != 1 {
		t.Errorf("after the failures' window: factor %v, want 1 (only successes left)", f)
	}
	now = now.Add(AdaptiveWindowDefault)
	b.observe(true)
	if f := b.Factor(); f != 1 {
		t.Errorf("a window later, one failure: factor %v, want 1 (the old attempts gone, below MinSamples)", f)
	}
}

// Bad settings are refused at Start with what to set.
func TestAdaptiveBackoffRefusedSettings(t *testing.T) {
	var nilBackoff *AdaptiveBackoff
	for _, c := range []struct {
		s    RetryStrategy
		want string
	}{
		{&AdaptiveBackoff{MaxFactor: 0.5}, "MaxFactor is 0.5"},
		{&AdaptiveBackoff{MaxFactor: math.NaN()}, "MaxFactor is NaN"},
		{&AdaptiveBackoff{Window: -time.Second}, "Window is -1s"},
		{&AdaptiveBackoff{MinSamples: -1}, "MinSamples is -1"},
		{&AdaptiveBackoff{MaxDelay: -time.Second}, "MaxDelay is -1s"},
		{nilBackoff, "nil *AdaptiveBackoff"},
	} {
		err := validateStrategies(map[string]RetryStrategy{"pay.Charge": c.s})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"pay.Charge"`) {
			t.Errorf("%#v: %v; want an error naming the task and saying %q", c.s, err, c.want)
		}
	}
	if err := validateStrategies(map[string]RetryStrategy{"pay.Charge": &AdaptiveBackoff{}}); err != nil {
		t.Errorf("the zero value: %v, want accepted (the defaults)", err)
	}
}

// The runtime reports each attempt of the names an AdaptiveBackoff is
// registered for: the retries of a call whose downstream fails every time
// wait the policy's delay until MinSamples attempts failed, then MaxFactor
// times it; the successes of another name sharing the value bring the
// factor down, and a permanent error counts as an answer. Without the
// runtime's reports (adaptive_backoff.go, learn) every delay would be the
// policy's.
func TestAdaptiveBackoffLearnsFromAttempts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		const minSamples, maxFactor = 4, 5
		adaptive := &AdaptiveBackoff{MinSamples: minSamples, MaxFactor: maxFactor, Window: time.Hour}
		pol := fastPolicy(20) // fixed 10 ms, no jitter
		var flakyRuns atomic.Int32
		flaky := &TaskDef{Name: "adaptive.flaky", Policy: pol, Run: func(context.Context, []byte) error {
			if flakyRuns.Add(1) <= 6 {
				return errors.New("503")
			}
			return nil
		}}
		ok := &TaskDef{Name: "adaptive.ok", Policy: pol, Run: func(context.Context, []byte) error { return nil }}
		perm := &TaskDef{Name: "adaptive.perm", Policy: pol, Run: func(context.Context, []byte) error { return Permanent(errors.New("400")) }}
		var onceRuns atomic.Int32
		once := &TaskDef{Name: "adaptive.once", Policy: pol, Run: func(context.Context, []byte) error {
			if onceRuns.Add(1) == 1 {
				return errors.New("503")
			}
			return nil
		}}
		cfg := testConfigT(t, dsn)
		cfg.RetryStrategies = map[string]RetryStrategy{flaky.Name: adaptive, ok.Name: adaptive, perm.Name: adaptive, once.Name: adaptive}
		rt := startRuntime(t, cfg)
		if err := rt.Register(flaky, ok, perm, once); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		backoffs := func(def *TaskDef, want State) []int64 {
			t.Helper()
			id, err := rt.Submit(ctx, Call{Task: def, Args: []byte(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			waitState(t, rt, id, want, 20*time.Second)
			hist, err := rt.Inspector().Attempts(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var out []int64
			for _, a := range hist {
				out = append(out, a.BackoffMs)
			}
			return out
		}
		// Attempts 1–3 fail below MinSamples (10 ms); from the 4th, every
		// attempt counted failed: 10 ms × 5.
		if got, want := backoffs(flaky, StateSucceeded), []int64{10, 10, 10, 50, 50, 50, 0}; !slices.Equal(got, want) {
			t.Fatalf("flaky: backoffs %v, want %v", got, want)
		}
		// 6 of 7 failed. 5 successes of another name and a permanent error
		// (an answer) make it 6 of 13; the next failure 7 of 14: ×3.
		for range 5 {
			backoffs(ok, StateSucceeded)
		}
		backoffs(perm, StateDead)
		if got, want := backoffs(once, StateSucceeded), []int64{10 * (1 + (maxFactor-1)*7/14), 0}; !slices.Equal(got, want) {
			t.Errorf("after successes: backoffs %v, want %v (factor 1 + %d × 7/14)", got, want, maxFactor-1)
		}
	})
}
