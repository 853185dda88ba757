package runtime

import (
	"context"
	"errors"
	"testing"
	"time"
)

// heartbeatCancelBound is how soon after a cancel commits an instance with
// the default LeaseDuration (30 s, renewals every 10 s) and a 1 s
// HeartbeatInterval must cancel the running attempt's context: its next
// heartbeat sees its cancel_seq moved and renews at once (docs/cancel.md),
// well under the 10 s renewal period, with room for a loaded machine.
const heartbeatCancelBound = 5 * time.Second

// With the default LeaseDuration (30 s: a renewal every 10 s) and a 1 s
// HeartbeatInterval, instance A runs an attempt and instance B's Inspector
// cancels its task: A's next heartbeat finds its cancel_seq moved, renews
// at once, and the attempt's context ends with ErrCancelled within
// heartbeatCancelBound of the cancel, not at the renewal 10 s on; no
// outcome, retry or fallback follows.
func TestCancelRunningAttemptWithinAHeartbeat(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfgA, cfgB := testConfigT(t, dsn), testConfigT(t, dsn)
		for _, c := range []*Config{&cfgA, &cfgB} {
			c.LeaseDuration, c.HeartbeatInterval = 30*time.Second, time.Second
		}
		cfgA.InstanceID, cfgB.InstanceID = "cancel-hb-a", "cancel-hb-b"
		a, b := startRuntime(t, cfgA), startRuntime(t, cfgB)
		probe, def := newCancelProbe("cancel-heartbeat", 60*time.Second)
		runs, fallbacks, started, cause := &probe.runs, &probe.fallbacks, probe.started, probe.cause
		// Only A runs it; B is the operator's process.
		if err := a.Register(def); err != nil {
			t.Fatal(err)
		}
		id := submitStarted(t, a, def, started)
		res, err := b.Inspector().Cancel(context.Background(), id, "not wanted any more")
		if err != nil {
			t.Fatal(err)
		}
		cancelledAt := time.Now()
		if res.From != StateRunning || res.Attempt != 1 || res.Worker != cfgA.InstanceID {
			t.Fatalf("Cancel = %+v, want from running, attempt 1, worker %s", res, cfgA.InstanceID)
		}
		select {
		case err := <-cause:
			if !errors.Is(err, ErrCancelled) {
				t.Fatalf("attempt context ended with %v, want cause ErrCancelled", err)
			}
		case <-time.After(heartbeatCancelBound):
			t.Fatalf("attempt not canceled %s after the cancel committed (HeartbeatInterval %s, renewals every %s)",
				time.Since(cancelledAt).Round(time.Millisecond), cfgA.HeartbeatInterval, cfgA.LeaseDuration/3)
		}
		t.Logf("attempt canceled %s after the cancel committed (HeartbeatInterval %s, renewals every %s)",
			time.Since(cancelledAt).Round(time.Millisecond), cfgA.HeartbeatInterval, cfgA.LeaseDuration/3)
		waitFor(t, 5*time.Second, "A to let go of the lease", func() bool { return len(a.leases.list()) == 0 })
		checkCancelled(t, b.Inspector(), id, "not wanted any more", 1, cfgA.InstanceID)
		if n, f := runs.Load(), fallbacks.Load(); n != 1 || f != 0 {
			t.Fatalf("%d runs and %d fallbacks, want 1 and 0", n, f)
		}
	})
}
