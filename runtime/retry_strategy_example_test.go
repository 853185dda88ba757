package runtime_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/argo-retry/argo/runtime"
)

var errVehicleBusy = errors.New("vehicle busy")

// A strategy that waits 20 s for a busy vehicle, up to 30 attempts, and
// leaves every other error to the task's policy.
func ExampleRetryStrategyFunc() {
	dispatch := runtime.RetryStrategyFunc(func(a runtime.FailedAttempt) (time.Duration, bool) {
		if errors.Is(a.Err, errVehicleBusy) {
			return 20 * time.Second, a.Attempt < 30
		}
		return a.PolicyRetry()
	})
	_ = runtime.Config{DSN: "sqlite:argo.db", RetryStrategies: map[string]runtime.RetryStrategy{"wes/agv.Dispatch": dispatch}}

	policy := runtime.RetryPolicy{MaxAttempts: 4, Backoff: runtime.BackoffFixed, Initial: time.Second, Jitter: runtime.Jitter{Kind: runtime.JitterNone}}
	for _, a := range []runtime.FailedAttempt{
		{TaskID: 7, Attempt: 5, Err: fmt.Errorf("dispatch: %w", errVehicleBusy), Policy: policy},
		{TaskID: 7, Attempt: 30, Err: errVehicleBusy, Policy: policy},
		{TaskID: 7, Attempt: 1, Err: errors.New("timeout"), Policy: policy},
		{TaskID: 7, Attempt: 4, Err: errors.New("timeout"), Policy: policy},
	} {
		delay, retry := dispatch.NextRetry(a)
		fmt.Printf("attempt %d (%v): retry=%v after %s\n", a.Attempt, a.Err, retry, delay)
	}
	// Output:
	// attempt 5 (dispatch: vehicle busy): retry=true after 20s
	// attempt 30 (vehicle busy): retry=false after 20s
	// attempt 1 (timeout): retry=true after 1s
	// attempt 4 (timeout): retry=false after 0s
}
