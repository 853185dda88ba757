package runtime

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// A lease whose renewal is not confirmed lapses life after its claim (or
// last confirmed renewal) was sent, by this process's monotonic clock: the
// function under it is canceled with cause ErrLeaseLost, reported lost (no
// outcome written); a function started under it later is canceled at once.
// A confirmed renewal moves the deadline.
func TestLeaseLapsesWithoutConfirmedRenewal(t *testing.T) {
	const life = 300 * time.Millisecond
	var l leaseSet
	var mu sync.Mutex
	var lapsed []leaseKey
	l.setup(life, func(k leaseKey, _ *leaseRun) { mu.Lock(); lapsed = append(lapsed, k); mu.Unlock() })

	k := leaseKey{ID: 1, Attempt: 1}
	sent := time.Now()
	l.add(k, sent)
	ctx, run := l.start(context.Background(), k, "t", "attempt")
	waitDone(t, ctx, 10*life)
	at := time.Now()
	if err := context.Cause(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("cause %v, want ErrLeaseLost", err)
	}
	if at.Sub(sent) < life {
		t.Fatalf("canceled %s after the claim was sent, want no earlier than %s", at.Sub(sent), life)
	}
	if got := l.list(); len(got) != 1 || got[0] != k {
		t.Fatalf("leases to renew %v, want the lapsed one still (held until its function returns)", got)
	}
	// Reported (logged) just after the cancel.
	waitFor(t, time.Second, "the lapse to be reported", func() bool { mu.Lock(); defer mu.Unlock(); return len(lapsed) > 0 })
	mu.Lock()
	if len(lapsed) != 1 || lapsed[0] != k {
		t.Errorf("lapses reported %v, want [%v]", lapsed, k)
	}
	mu.Unlock()
	// A function started under the lapsed lease (a held retry getting its
	// worker) is canceled before it runs.
	late, lateRun := l.start(context.Background(), k, "t", "attempt")
	if !errors.Is(context.Cause(late), ErrLeaseLost) {
		t.Errorf("a function started under a lapsed lease has cause %v, want ErrLeaseLost", context.Cause(late))
	}
	// A renewal confirmed while the told-to-stop function still runs
	// leaves the lease lapsed.
	l.renewed([]leaseKey{k}, time.Now())
	again, againRun := l.start(context.Background(), k, "t", "attempt")
	if again.Err() == nil {
		t.Error("a renewal revived a lapsed lease whose function, told to stop, had not returned")
	}
	if !l.done(k, run) || !l.done(k, lateRun) || !l.done(k, againRun) {
		t.Error("done reported a lapsed lease's run as not lost: its outcome would be written")
	}
	l.remove(k)

	// Confirmed renewals keep it: renewed every life/3, it outlives
	// several lives, then lapses life after the last renewal sent.
	k2 := leaseKey{ID: 2, Attempt: 1}
	l.add(k2, time.Now())
	ctx2, run2 := l.start(context.Background(), k2, "t", "attempt")
	var last time.Time
	for end := time.Now().Add(3 * life); time.Now().Before(end); {
		time.Sleep(life / 3) // the renewal period, as renewLoop's
		last = time.Now()
		l.renewed([]leaseKey{k2}, last)
		if ctx2.Err() != nil {
			t.Fatalf("canceled (%v) although renewed every %s", context.Cause(ctx2), life/3)
		}
	}
	waitDone(t, ctx2, 10*life)
	if d := time.Since(last); d < life {
		t.Fatalf("canceled %s after the last confirmed renewal was sent, want no earlier than %s", d, life)
	}
	if !l.done(k2, run2) {
		t.Error("done reported the lapsed run as not lost")
	}
	l.remove(k2)
}

// The rescuer waits at least as long after a lease ends as the instance
// stops its functions before it ends: the next attempt can start only
// after the last one was told to stop, with both margins between them.
func TestRescueGraceCoversLeaseStopMargin(t *testing.T) {
	for _, lease := range []time.Duration{2 * time.Second, 30 * time.Second, 5 * time.Minute} {
		stop, grace := leaseStopMargin(lease), rescueGrace(lease)
		if stop <= 0 || grace < stop {
			t.Errorf("LeaseDuration %s: stop margin %s, rescue grace %s: want a positive stop margin covered by the grace", lease, stop, grace)
		}
	}
	cfg := testConfig(testdb.SQLiteDSN(t))
	rt := startRuntime(t, cfg)
	if got, want := rt.rescuer.Grace(), rescueGrace(cfg.LeaseDuration); got != want || got < leaseStopMargin(cfg.LeaseDuration) {
		t.Errorf("the runtime's rescuer waits %s after a lease ends, want %s (at least the stop margin %s)", got, want, leaseStopMargin(cfg.LeaseDuration))
	}
}

// waitDone waits for ctx to end, failing the test after timeout.
func waitDone(t *testing.T, ctx context.Context, timeout time.Duration) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(timeout):
		t.Fatalf("the function's context is not canceled %s after its lease's deadline passed unrenewed", timeout)
	}
}
