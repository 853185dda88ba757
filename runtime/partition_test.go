package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// execution is one run of a function, as the function saw it: on which
// instance, when it started, when its context was canceled (and why), when
// it returned; times on this process's monotonic clock.
type execution struct {
	instance   string
	attempt    int
	start, end time.Time
	canceledAt time.Time // zero: not canceled before it returned
	cause      error
}

// executions records the runs of every task, by task id.
type executions struct {
	mu   sync.Mutex
	runs map[int64][]*execution
}

// run is a task function that runs for d unless its context ends first,
// recording itself under instance.
func (x *executions) run(instance string, d time.Duration) func(ctx context.Context, args []byte) error {
	return func(ctx context.Context, args []byte) error {
		e := &execution{instance: instance, start: time.Now()}
		id, attempt, _ := AttemptFrom(ctx)
		e.attempt = attempt
		x.mu.Lock()
		if x.runs == nil {
			x.runs = map[int64][]*execution{}
		}
		x.runs[id] = append(x.runs[id], e)
		x.mu.Unlock()
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			x.mu.Lock()
			e.canceledAt, e.cause = time.Now(), context.Cause(ctx)
			x.mu.Unlock()
		}
		x.mu.Lock()
		e.end = time.Now()
		x.mu.Unlock()
		return ctx.Err()
	}
}

func (x *executions) of(id int64) []execution {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]execution, len(x.runs[id]))
	for i, e := range x.runs[id] {
		out[i] = *e
	}
	return out
}

// One instance cut off from the database (refused, blackholed, frozen)
// while its attempts run: it cancels them itself, with cause ErrLeaseLost,
// before its leases end, and writes no outcome for them; the other
// instance rescues each task only after that, and runs its next attempt.
// No task has two attempts running at once.
func TestPartitionedInstanceStopsItsAttempts(t *testing.T) {
	const (
		lease   = 2 * time.Second
		runFor  = 6 * time.Second // each attempt, unless canceled
		cutFor  = 7 * time.Second
		ntasks  = 8
		timeout = 30 * time.Second
	)
	for _, way := range []struct {
		name string
		cut  func(p *testdb.FaultProxy, on bool)
	}{
		{"refuse", (*testdb.FaultProxy).SetRefusing},
		{"blackhole", (*testdb.FaultProxy).SetBlackhole},
		{"freeze", (*testdb.FaultProxy).SetFrozen},
	} {
		t.Run(way.name, func(t *testing.T) {
			t.Parallel()
			dsn := testdb.MySQLDSN(t)
			proxy := testdb.NewFaultProxy(t, dsn)
			var x executions
			const name = "partition.work"
			// B, connected directly, holds the maintenance role (it rescues).
			cfgB := testConfigT(t, dsn)
			cfgB.InstanceID, cfgB.LeaseDuration = "B", lease
			b := startRuntime(t, cfgB)
			waitFor(t, 10*time.Second, "B to hold the maintenance role", b.elector.Leading)
			cfgA := testConfigT(t, proxy.DSN(dsn))
			cfgA.InstanceID, cfgA.LeaseDuration, cfgA.Workers = "A", lease, ntasks
			a := startRuntime(t, cfgA)
			defA := &TaskDef{Name: name, Policy: fastPolicy(3), Run: x.run("A", runFor)}
			if err := a.Register(defA); err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for i := range ntasks {
				id, err := a.Submit(context.Background(), Call{Task: defA, Args: markerArgs(fmt.Sprint(i))})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			// And a sync call, its first attempt run in its caller's goroutine.
			const syncName = "partition.sync"
			defSync := &TaskDef{Name: syncName, Thread: Sync, Policy: fastPolicy(3), Run: x.run("A", runFor)}
			if err := a.Register(defSync); err != nil {
				t.Fatal(err)
			}
			type syncResult struct {
				id  int64
				err error
			}
			syncDone := make(chan syncResult, 1)
			go func() {
				id, err := a.Submit(context.Background(), Call{Task: defSync, Args: markerArgs("sync")})
				syncDone <- syncResult{id, err}
			}()
			waitFor(t, 10*time.Second, "A to run the sync call's first attempt", func() bool {
				x.mu.Lock()
				defer x.mu.Unlock()
				return len(x.runs) == len(ids)+1
			})
			waitFor(t, 10*time.Second, "A to run every task's first attempt", func() bool {
				for _, id := range ids {
					if len(x.of(id)) == 0 {
						return false
					}
				}
				return true
			})
			// B can now take a task only by rescuing it.
			for _, n := range []string{name, syncName} {
				if err := b.Register(&TaskDef{Name: n, Policy: fastPolicy(3), Run: x.run("B", runFor)}); err != nil {
					t.Fatal(err)
				}
			}
			way.cut(proxy, true)
			cut := time.Now()
			uncut := sync.OnceFunc(func() { way.cut(proxy, false) })
			defer uncut()
			go func() {
				time.Sleep(cutFor) // the length of the fault, not a synchronisation
				uncut()
			}()
			var sync syncResult
			select {
			case sync = <-syncDone:
			case <-time.After(timeout):
				t.Fatalf("the sync call has not returned %s after the cut", timeout)
			}
			if !errors.Is(sync.err, ErrLeaseLost) {
				t.Errorf("the sync call whose instance was cut off returned %v, want an error wrapping ErrLeaseLost", sync.err)
			}
			ids = append(ids, sync.id)
			for _, id := range ids {
				waitSucceeded(t, b, id, timeout)
			}
			uncut()
			for _, id := range ids {
				runs := x.of(id)
				if len(runs) != 2 || runs[0].instance != "A" || runs[0].attempt != 1 || runs[1].instance != "B" || runs[1].attempt != 2 {
					t.Errorf("task %d ran %s, want attempt 1 on A then attempt 2 on B", id, describeRuns(runs, cut))
					continue
				}
				first, next := runs[0], runs[1]
				if next.start.Before(first.end) {
					t.Errorf("task %d: two attempts ran at once for %s: %s", id, first.end.Sub(next.start).Round(time.Millisecond), describeRuns(runs, cut))
				}
				if first.canceledAt.IsZero() || !errors.Is(first.cause, ErrLeaseLost) || !first.canceledAt.Before(next.start) {
					t.Errorf("task %d: A's attempt was not canceled with ErrLeaseLost before B's started (cause %v): %s", id, first.cause, describeRuns(runs, cut))
				}
				t.Logf("task %d: %s", id, describeRuns(runs, cut))
				if h := historyOf(t, b, id); h != "1:lease_expired,2:succeeded" {
					t.Errorf("task %d: history %q, want 1:lease_expired,2:succeeded (no outcome written by A)", id, h)
				}
			}
		})
	}
}

// describeRuns prints runs with times relative to the cut.
func describeRuns(runs []execution, cut time.Time) string {
	out := ""
	for _, e := range runs {
		out += fmt.Sprintf("[%s attempt %d: start %+.2fs", e.instance, e.attempt, e.start.Sub(cut).Seconds())
		if !e.canceledAt.IsZero() {
			out += fmt.Sprintf(", canceled %+.2fs (%v)", e.canceledAt.Sub(cut).Seconds(), e.cause)
		}
		if !e.end.IsZero() {
			out += fmt.Sprintf(", end %+.2fs", e.end.Sub(cut).Seconds())
		}
		out += "] "
	}
	return out
}

// A blip that makes renewals fail for longer than a renewal period, but
// ends well before the lease would lapse, cancels nothing: a failed
// renewal is tried again within LeaseDuration/20, not at the next
// LeaseDuration/3 tick (which would come after the lease lapsed here).
func TestRenewalBlipCancelsNothing(t *testing.T) {
	const lease = 3 * time.Second
	dsn := testdb.MySQLDSN(t)
	proxy := testdb.NewFaultProxy(t, dsn)
	cfg := testConfigT(t, proxy.DSN(dsn))
	cfg.LeaseDuration = lease
	a := startRuntime(t, cfg)
	var x executions
	def := &TaskDef{Name: "blip.work", Policy: fastPolicy(1), Run: x.run("A", 3*lease)}
	if err := a.Register(def); err != nil {
		t.Fatal(err)
	}
	id, err := a.Submit(context.Background(), Call{Task: def, Args: markerArgs("blip")})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the attempt to start", func() bool { return len(x.of(id)) == 1 })
	// Watched from a direct connection: each renewal moves lease_until.
	direct, err := Start(context.Background(), func() Config { c := testConfigT(t, dsn); c.InstanceID = "watcher"; return c }())
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Stop(context.Background())
	leaseUntil := func() Millis {
		var until Millis
		if err := dbx(direct.store).GetContext(context.Background(), &until, "SELECT lease_until FROM argo_task WHERE id = ?", id); err != nil {
			t.Fatal(err)
		}
		return until
	}
	first := leaseUntil()
	waitFor(t, 2*lease, "a renewal", func() bool { return leaseUntil() != first })
	renewed := time.Now()
	// Cut from 0.6 to 2.2 renewal periods after that renewal: the next two
	// ticks fail, and the tick after them would come 0.3 periods after the
	// lease's local deadline (2.7 periods). Watched for a whole lease.
	period := lease / 3
	time.Sleep(time.Until(renewed.Add(period * 6 / 10))) // the fault's schedule, not a synchronisation
	proxy.SetRefusing(true)
	time.Sleep(time.Until(renewed.Add(period * 22 / 10)))
	proxy.SetRefusing(false)
	deadline := renewed.Add(lease)
	for time.Now().Before(deadline) {
		if e := x.of(id)[0]; !e.canceledAt.IsZero() {
			t.Fatalf("the attempt was canceled (%v) %s after the last renewal before a %s blip", e.cause, e.canceledAt.Sub(renewed).Round(time.Millisecond), period*16/10)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
