package runtime

import (
	"context"
	"fmt"
	"time"
)

// stopWait is how long Stop waits for running attempts before it cancels
// them: Config.ShutdownTimeout, or less if ctx ends sooner.
func (rt *Runtime) stopWait(ctx context.Context) time.Duration {
	wait := rt.cfg.ShutdownTimeout
	if deadline, ok := ctx.Deadline(); ok {
		wait = min(wait, max(time.Until(deadline), 0))
	}
	return wait
}

// logStopWaiting says what Stop waits for ("waiting up to 30s for 1 running
// attempt: task 42 (send-mail) attempt 1"), at most ten of them and a
// count. Nothing is logged when nothing runs.
func (rt *Runtime) logStopWaiting(wait time.Duration) {
	running := rt.leases.running()
	if len(running) == 0 {
		return
	}
	rt.log.Info(fmt.Sprintf("argo: Stop: waiting up to %s for %d running %s: %s", wait.Round(time.Millisecond), len(running), plural(len(running), "attempt", "attempts"), describeRunning(running)),
		"instance", rt.cfg.InstanceID)
}

// logStopCanceling says, at Stop's deadline, which functions it cancels:
// their tasks are given back, the attempt not counted.
func (rt *Runtime) logStopCanceling(waited time.Duration) {
	running := rt.leases.running()
	if len(running) == 0 {
		return
	}
	rt.log.Warn(fmt.Sprintf("argo: Stop: still running after %s; canceling %d %s (their tasks are given back, the attempt not counted): %s", waited.Round(time.Millisecond), len(running), plural(len(running), "attempt", "attempts"), describeRunning(running)),
		"instance", rt.cfg.InstanceID)
}

// plural returns one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
