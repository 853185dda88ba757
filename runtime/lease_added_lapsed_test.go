package runtime

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// A lease added with its deadline gone already (a row whose INSERT or
// claim was answered after its lease's local deadline) lapses when a
// function is started under it, before that function runs: its timer,
// which fires on another goroutine, may not have run yet, and the function
// must not start under a lease the rescuer may take back. The run is then
// one whose lease lapsed here (lapsedHere), so that it is given back undone
// (runtime.run) rather than charged lease_expired by the rescuer.
func TestLeaseAddedPastItsDeadlineLapsesAtStart(t *testing.T) {
	const life = time.Second
	var l leaseSet
	var reported atomic.Int32
	l.setup(life, func(leaseKey, *leaseRun) { reported.Add(1) })
	for i := range 200 {
		k := leaseKey{ID: int64(i + 1), Attempt: 1}
		l.add(k, time.Now().Add(-2*life))
		ctx, run := l.start(context.Background(), k, "t", "attempt")
		if !errors.Is(context.Cause(ctx), ErrLeaseLost) {
			t.Fatalf("lease %d: a function started under a lease past its deadline has cause %v, want ErrLeaseLost", i+1, context.Cause(ctx))
		}
		if !l.lapsedHere(k) {
			t.Fatalf("lease %d: not lapsed here after its deadline passed", i+1)
		}
		if !l.done(k, run) {
			t.Fatalf("lease %d: the run is not reported lost", i+1)
		}
		l.remove(k)
	}
	waitFor(t, 5*time.Second, "each lapse to be reported", func() bool { return reported.Load() >= 200 })
	if n := reported.Load(); n != 200 {
		t.Fatalf("%d lapses reported, want 200 (one each)", n)
	}
}
