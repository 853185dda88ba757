package runtime

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// MaxStrategyDelay caps the delay a RetryStrategy returns: a longer one
// (a bug, an overflowed computation) waits MaxStrategyDelay, with a
// warning in the log.
const MaxStrategyDelay = 24 * time.Hour

// FailedAttempt is what a RetryStrategy decides on: one failed attempt of
// a task.
type FailedAttempt struct {
	// TaskID, TaskName and Tenant name the task.
	TaskID   int64
	TaskName string
	Tenant   string
	// Attempt is the number of the attempt that failed, from 1, as the
	// retry policy counts attempts: attempts the callee deferred
	// (RetryAfter) are left out.
	Attempt int
	// Deferred is how many of the task's attempts before this one the
	// callee deferred. Attempt + Deferred is the failed attempt's number in
	// the task's history and in its IdempotencyKey.
	Deferred int
	// Err is what the attempt returned (for a task whose lease expired, an
	// error that wraps ErrLeaseExpired).
	Err error
	// Policy is the task's retry policy, as stored with it.
	Policy RetryPolicy
}

// ErrLeaseExpired is wrapped by FailedAttempt.Err when the attempt ended
// because its instance stopped renewing its lease (it died or hung) and the
// rescuer took the task back.
var ErrLeaseExpired = errors.New("argo: the attempt's lease expired")

// PolicyRetry is the decision of the task's policy alone: stop when its
// attempts are used up, else its backoff delay. A RetryStrategy can return
// it for the cases it does not handle itself.
func (a FailedAttempt) PolicyRetry() (delay time.Duration, retry bool) {
	if a.Policy.Exhausted(a.Attempt) {
		return 0, false
	}
	return a.Policy.Delay(a.TaskID, a.Attempt), true
}

// RetryStrategy decides, in Go, whether and when a failed task runs again:
// the delay before the next attempt, or retry false to stop (the task is
// exhausted: its fallback runs, else it is dead). Register one per task
// name in Config.RetryStrategies; it then replaces the task's policy
// (attempts and backoff) for that decision — FailedAttempt.PolicyRetry is
// the policy's own answer, to fall back on.
//
// It is not asked when the attempt's error is permanent (Permanent,
// Config.IsPermanent: the task stops) or asks for a delay itself
// (RetryAfter: that delay wins, and the policy does not count the
// attempt, nor does FailedAttempt.Attempt of a later one). A negative
// delay is 0, one above MaxStrategyDelay is MaxStrategyDelay; a strategy
// that panics is logged at ERROR and the policy decides (PolicyRetry): the
// task is never lost. It runs on the worker that ran the attempt (and on
// the maintenance instance for a rescued lease), so it must be quick and
// must not block; every instance should register the same strategies.
type RetryStrategy interface {
	NextRetry(a FailedAttempt) (delay time.Duration, retry bool)
}

// RetryStrategyFunc is a function used as a RetryStrategy.
type RetryStrategyFunc func(a FailedAttempt) (delay time.Duration, retry bool)

// NextRetry calls f.
func (f RetryStrategyFunc) NextRetry(a FailedAttempt) (time.Duration, bool) { return f(a) }

// validateStrategies reports a nil strategy or an empty name in
// Config.RetryStrategies.
func validateStrategies(m map[string]RetryStrategy) error {
	for name, s := range m {
		if name == "" {
			return errors.New("argo: Config.RetryStrategies has an empty task name: key each strategy by the task's name")
		}
		if s == nil {
			return fmt.Errorf("argo: Config.RetryStrategies[%q] is nil: remove the entry to use the task's policy", name)
		}
		if err := validateAdaptive(name, s); err != nil {
			return err
		}
	}
	return nil
}

// nextRetry decides after failed attempt a: the task's strategy (if
// Config.RetryStrategies has one for its name), else its policy. A
// permanent error stops without asking; a RetryAfter error is decided by
// the caller (it wins over both).
func (rt *Runtime) nextRetry(a FailedAttempt, permanent bool) (time.Duration, bool) {
	if permanent {
		return 0, false
	}
	s := rt.cfg.RetryStrategies[a.TaskName]
	if s == nil {
		return a.PolicyRetry()
	}
	if _, deferred := retryAfterOf(a.Err); deferred {
		return 0, true // the callee's delay is used instead; the strategy is not asked
	}
	delay, retry, err := askStrategy(s, a)
	if err != nil {
		rt.log.Error("argo: retry strategy panicked; the task's policy decides this retry", "task_id", a.TaskID, "task", a.TaskName, "attempt", a.Attempt, "error", err)
		return a.PolicyRetry()
	}
	if !retry {
		return 0, false
	}
	switch {
	case delay < 0:
		rt.log.Warn("argo: retry strategy returned a negative delay; retrying at once", "task_id", a.TaskID, "task", a.TaskName, "attempt", a.Attempt, "delay", delay)
		delay = 0
	case delay > MaxStrategyDelay:
		rt.log.Warn("argo: retry strategy returned a delay above MaxStrategyDelay; capped", "task_id", a.TaskID, "task", a.TaskName, "attempt", a.Attempt, "delay", delay, "cap", MaxStrategyDelay)
		delay = MaxStrategyDelay
	}
	return delay, true
}

// askStrategy calls s, turning a panic into an error with the stack.
func askStrategy(s RetryStrategy, a FailedAttempt) (delay time.Duration, retry bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	delay, retry = s.NextRetry(a)
	return delay, retry, nil
}

// rescueNext is the retry decision for a task whose lease expired: its
// strategy (asked with an error wrapping ErrLeaseExpired), else its policy.
func (rt *Runtime) rescueNext(t *Task, pol RetryPolicy, msg string) (time.Duration, bool) {
	return rt.nextRetry(FailedAttempt{TaskID: t.ID, TaskName: t.Name, Tenant: t.Tenant, Attempt: countedAttempt(t), Deferred: t.DeferredTimes, Err: fmt.Errorf("%w: %s", ErrLeaseExpired, msg), Policy: pol}, false)
}

// countedAttempt is the number of t's latest attempt as the retry policy
// counts attempts: execute_times less the attempts the callee deferred
// (RetryAfter), at least 1.
func countedAttempt(t *Task) int { return max(t.ExecuteTimes-t.DeferredTimes, 1) }
