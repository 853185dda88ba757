package runtime

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// AdaptiveBackoff defaults.
const (
	// AdaptiveWindowDefault is how far back AdaptiveBackoff counts attempts.
	AdaptiveWindowDefault = time.Minute
	// AdaptiveMaxFactorDefault is the delay's multiplier when every
	// attempt in the window failed.
	AdaptiveMaxFactorDefault = 8.0
	// AdaptiveMinSamplesDefault is how many attempts the window must hold
	// before the failure rate moves the delay.
	AdaptiveMinSamplesDefault = 10
)

// adaptiveBuckets is how many slices the window is counted in: an attempt
// leaves the count between Window and Window×(1+1/adaptiveBuckets) after
// it ended.
const adaptiveBuckets = 10

// AdaptiveBackoff is a built-in RetryStrategy whose delay grows with the
// recent failure rate of the calls it serves (seed 000's adaptive
// backoff): the task's retry policy decides whether to retry and its
// delay (FailedAttempt.PolicyRetry), and the delay is multiplied by
//
//	1 + (MaxFactor − 1) × rate
//
// where rate is the share of failed attempts among the attempts that ended
// on this instance in the last Window (1 while the downstream fails every
// call, 0 once it answers again). Below MinSamples attempts in the window
// the factor is 1: a lone failure waits what the policy says. The result
// is capped at MaxDelay when set (and, like every strategy's, at
// MaxStrategyDelay).
//
// What counts: an attempt that returned nil or a permanent error (the
// downstream answered) is a success; one that failed, panicked, timed out
// or was deferred by RetryAfter (the downstream is busy) is a failure.
// Attempts given back (Undecodable, Stop) and leases the rescuer took back
// are not counted.
//
// Register one value under the task names whose downstream it measures:
// a value registered under several names (a flow group's members) shares
// one count among them; one per name counts each alone. The count is this
// instance's own, in memory: each instance adapts to what it sees, and a
// restarted one starts from the policy's delays. It costs a map lookup and
// a few counter updates under a mutex per attempt of the names it serves,
// nothing for other tasks.
//
// Its fields are read at its first use: set them before Start. The zero
// value uses the defaults.
type AdaptiveBackoff struct {
	// Window is how far back attempts count. Default AdaptiveWindowDefault (1 min).
	Window time.Duration
	// MaxFactor is the delay's multiplier when every attempt in the window
	// failed; at least 1. Default AdaptiveMaxFactorDefault (8).
	MaxFactor float64
	// MinSamples is how many attempts the window must hold before the rate
	// counts. Default AdaptiveMinSamplesDefault (10).
	MinSamples int
	// MaxDelay, if positive, caps the adapted delay. Default 0: no cap
	// beyond MaxStrategyDelay.
	MaxDelay time.Duration

	now func() time.Time // tests; default time.Now

	once    sync.Once
	mu      sync.Mutex
	slot    time.Duration // Window / adaptiveBuckets
	buckets [adaptiveBuckets]adaptiveBucket
}

// adaptiveBucket counts the attempts that ended in one slice of time.
type adaptiveBucket struct {
	start            int64 // slice number (Unix ns / slot)
	attempts, failed int
}

// validate reports a setting that cannot work.
func (b *AdaptiveBackoff) validate() error {
	switch {
	case b.Window < 0:
		return fmt.Errorf("AdaptiveBackoff.Window is %s: use a positive duration, or 0 for %s", b.Window, AdaptiveWindowDefault)
	case math.IsNaN(b.MaxFactor) || math.IsInf(b.MaxFactor, 0) || b.MaxFactor != 0 && b.MaxFactor < 1:
		return fmt.Errorf("AdaptiveBackoff.MaxFactor is %v: use a finite factor of 1 or more (1 never adapts), or 0 for %v", b.MaxFactor, AdaptiveMaxFactorDefault)
	case b.MinSamples < 0:
		return fmt.Errorf("AdaptiveBackoff.MinSamples is %d: use 1 or more, or 0 for %d", b.MinSamples, AdaptiveMinSamplesDefault)
	case b.MaxDelay < 0:
		return fmt.Errorf("AdaptiveBackoff.MaxDelay is %s: use a positive duration, or 0 for no cap", b.MaxDelay)
	}
	return nil
}

// setup applies the defaults, once.
func (b *AdaptiveBackoff) setup() {
	b.once.Do(func() {
		if b.Window == 0 {
			b.Window = AdaptiveWindowDefault
		}
		if b.MaxFactor == 0 {
			b.MaxFactor = AdaptiveMaxFactorDefault
		}
		if b.MinSamples == 0 {
			b.MinSamples = AdaptiveMinSamplesDefault
		}
		if b.now == nil {
			b.now = time.Now
		}
		b.slot = max(b.Window/adaptiveBuckets, time.Millisecond)
	})
}

// observe counts one attempt that ended now.
func (b *AdaptiveBackoff) observe(failed bool) {
	b.setup()
	n := b.now().UnixNano() / int64(b.slot)
	b.mu.Lock()
	defer b.mu.Unlock()
	bk := &b.buckets[n%adaptiveBuckets]
	if bk.start != n {
		*bk = adaptiveBucket{start: n}
	}
	bk.attempts++
	if failed {
		bk.failed++
	}
}

// Factor is the multiplier NextRetry applies now: 1 + (MaxFactor − 1) ×
// the failure rate of the window, or 1 below MinSamples attempts.
func (b *AdaptiveBackoff) Factor() float64 {
	b.setup()
	n := b.now().UnixNano() / int64(b.slot)
	b.mu.Lock()
	attempts, failed := 0, 0
	for _, bk := range b.buckets {
		if n-bk.start < adaptiveBuckets {
			attempts += bk.attempts
			failed += bk.failed
		}
	}
	b.mu.Unlock()
	if attempts == 0 || attempts < b.MinSamples {
		return 1
	}
	return 1 + (b.MaxFactor-1)*float64(failed)/float64(attempts)
}

// NextRetry is the policy's decision with its delay multiplied by Factor.
func (b *AdaptiveBackoff) NextRetry(a FailedAttempt) (time.Duration, bool) {
	delay, retry := a.PolicyRetry()
	if !retry {
		return 0, false
	}
	d := float64(delay) * b.Factor()
	if d >= float64(MaxStrategyDelay) {
		d = float64(MaxStrategyDelay)
	}
	delay = time.Duration(d)
	if b.MaxDelay > 0 && delay > b.MaxDelay {
		delay = b.MaxDelay
	}
	return delay, true
}

// attemptLearner is a RetryStrategy that learns from the outcome of every
// attempt of the names it is registered for (AdaptiveBackoff).
type attemptLearner interface {
	observe(failed bool)
}

// learn reports an attempt of task name that ended (failed or not) to the
// name's strategy, if it learns. Free when no strategy is registered.
func (rt *Runtime) learn(name string, failed bool) {
	if len(rt.cfg.RetryStrategies) == 0 {
		return
	}
	if l, ok := rt.cfg.RetryStrategies[name].(attemptLearner); ok {
		l.observe(failed)
	}
}

// validateAdaptive reports a bad setting of an AdaptiveBackoff registered
// for name (nil when s is another strategy).
func validateAdaptive(name string, s RetryStrategy) error {
	b, ok := s.(*AdaptiveBackoff)
	switch {
	case !ok:
		return nil
	case b == nil:
		return fmt.Errorf("argo: Config.RetryStrategies[%q] is a nil *AdaptiveBackoff: use &runtime.AdaptiveBackoff{} for the defaults", name)
	}
	if err := b.validate(); err != nil {
		return fmt.Errorf("argo: Config.RetryStrategies[%q]: %w", name, err)
	}
	return nil
}
