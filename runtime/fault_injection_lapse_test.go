package runtime

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// With Config.FaultInjection on, an attempt first reads its task's
// transient-fail requests. When that read is not answered before the lease
// lapses here (the network stalls, the server is killed), the function has
// not been called: the attempt is given back undone, as one whose lease
// lapsed before its function started, and not left to the rescuer, which
// would charge a lease_expired attempt that never ran (the fault checker's
// charged-unrun, MariaDB seed 6702196171921).
func TestFaultInjectionReadUnansweredBeforeLeaseLapses(t *testing.T) {
	rt, proxy := proxiedRuntime(t, func(c *Config) { c.FaultInjection = true })
	ctx := context.Background()
	const name = "inject.read.lapse" // no handler registered: the poller leaves the row alone
	now := nowMillis()
	mustInsert(t, rt.store, sampleTask(name, StatePending, now-1000, 0))
	tasks, err := rt.store.ClaimDue(ctx, rt.cfg.InstanceID, now, now+Millis(rt.cfg.LeaseDuration/time.Millisecond), 1, []string{name}, nil)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("claim: %v, %d tasks", err, len(tasks))
	}
	task := tasks[0]
	var called atomic.Bool
	h := &TaskDef{Name: name, Policy: fastPolicy(1), Run: func(context.Context, []byte) error { called.Store(true); return nil }}
	// The network stalls before the attempt's read of its transient-fail
	// requests: neither it nor any renewal is answered, and the lease
	// lapses here.
	proxy.SetFrozen(true)
	if rt.reserve(1) != 1 {
		t.Fatal("no worker free")
	}
	errc := make(chan error, 1)
	go func() { errc <- rt.run(ctx, task, h, false, false) }()
	lease := leaseKey{ID: task.ID, Attempt: task.ExecuteTimes}
	waitFor(t, 2*rt.cfg.LeaseDuration, "the lease to lapse here (or the attempt to end)", func() bool { return rt.leases.lapsedHere(lease) || len(errc) > 0 })
	// The network comes back before the lease would be rescued.
	proxy.SetFrozen(false)
	var runErr error
	select {
	case runErr = <-errc:
	case <-time.After(4 * rt.cfg.LeaseDuration):
		t.Fatalf("the attempt did not end within %s of its lease lapsing", 4*rt.cfg.LeaseDuration)
	}
	if !errors.Is(runErr, ErrLeaseLost) {
		t.Fatalf("run: %v, want ErrLeaseLost", runErr)
	}
	if called.Load() {
		t.Fatal("the function was called although the read was not answered")
	}
	waitFor(t, 20*time.Second, "the row to be given back or rescued", func() bool {
		got, err := rt.Inspector().Get(ctx, task.ID)
		return err == nil && got.State != StateRunning
	})
	got, err := rt.Inspector().Get(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if hist := historyOf(t, rt, task.ID); hist != "" || got.ExecuteTimes != 0 || got.State != StatePending {
		t.Fatalf("%s at execute_times %d with history %q; want pending, 0, none (given back undone, not charged)", got.State, got.ExecuteTimes, hist)
	}
}
