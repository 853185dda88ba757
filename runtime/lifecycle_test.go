package runtime

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// The attempt lifecycle at its edges: leases renewed for as long as the
// function runs (Stop included), a lost lease cancels the attempt, Stop is
// bounded by its context, alerts after Stop, the maintenance role at Stop.

// openDB opens a handle of its own on dsn, for looking at rows while (or
// after) runtimes run.
func openDB(t *testing.T, dsn string) (*sql.DB, *Inspector) {
	t.Helper()
	db, dialect, err := OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, NewInspector(db, dialect)
}

// overlapProbe counts executions per (task, attempt) and catches two
// executions of one task at once.
type overlapProbe struct {
	mu       sync.Mutex
	runs     map[string]int
	inFlight sync.Map // task id → *atomic.Int32
	overlaps atomic.Int32
}

func (p *overlapProbe) enter(ctx context.Context) (leave func()) {
	id, attempt, _ := AttemptFrom(ctx)
	p.mu.Lock()
	if p.runs == nil {
		p.runs = map[string]int{}
	}
	p.runs[fmt.Sprintf("%d/%d", id, attempt)]++
	p.mu.Unlock()
	c, _ := p.inFlight.LoadOrStore(id, new(atomic.Int32))
	n := c.(*atomic.Int32)
	if n.Add(1) > 1 {
		p.overlaps.Add(1)
	}
	return func() { n.Add(-1) }
}

func (p *overlapProbe) executions() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.runs {
		out[k] = v
	}
	return out
}

// Issue #11 point 1: Lease 2 s, ShutdownTimeout 6 s, an attempt that returns
// 4.5 s after Stop begins, a second instance running. The stopping instance
// keeps the lease renewed until the attempt returns: the other instance never
// starts attempt 2, and attempt 1's success is recorded.
func TestStopKeepsLeaseUntilAttemptReturns(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		const work = 4500 * time.Millisecond
		var probe overlapProbe
		stopBegan := make(chan struct{})
		started := make(chan struct{}, 1)
		def := &TaskDef{Name: "outlives-stop", Policy: fastPolicy(5), Run: func(ctx context.Context, args []byte) error {
			defer probe.enter(ctx)()
			select {
			case started <- struct{}{}:
			default:
			}
			select {
			case <-stopBegan:
				time.Sleep(work) // the work: it returns 4.5 s after Stop begins
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Second):
				return errors.New("Stop never began")
			}
			return nil
		}}
		cfg := testConfig(dsn)
		cfg.LeaseDuration, cfg.ShutdownTimeout = 2*time.Second, 6*time.Second
		cfg.Logger = testLogger(t)
		cfg1, cfg2 := cfg, cfg
		cfg1.InstanceID, cfg2.InstanceID = "stopping", "staying"
		rt1 := startRuntime(t, cfg1)
		rt2 := startRuntime(t, cfg2)
		if err := rt1.Register(def); err != nil {
			t.Fatal(err)
		}
		id := submitStarted(t, rt1, def, started)
		// Only now can the other instance run it (a Submit that meets the
		// poller mid-claim leaves the task to whichever poller comes next).
		if err := rt2.Register(def); err != nil {
			t.Fatal(err)
		}
		if task, err := rt2.Inspector().Get(context.Background(), id); err != nil || task.LeaseOwner != "stopping" {
			t.Fatalf("task %d owner %q execute_times %d created %d modified %d, %v: want it run by the instance that stops", id, task.LeaseOwner, task.ExecuteTimes, task.GmtCreate, task.GmtModified, err)
		}
		close(stopBegan)
		began := time.Now()
		if err := rt1.Stop(context.Background()); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		took := time.Since(began)
		if n := probe.overlaps.Load(); n != 0 {
			t.Fatalf("%d overlapping executions of the task (executions per task/attempt: %v)", n, probe.executions())
		}
		task := waitState(t, rt2, id, StateSucceeded, 5*time.Second)
		if task.ExecuteTimes != 1 {
			t.Fatalf("execute_times = %d, want 1", task.ExecuteTimes)
		}
		if got := probe.executions(); len(got) != 1 || got[fmt.Sprintf("%d/1", id)] != 1 {
			t.Fatalf("executions per task/attempt = %v, want only attempt 1, once", got)
		}
		atts, err := rt2.Inspector().Attempts(context.Background(), id)
		if err != nil || len(atts) != 1 || atts[0].Outcome != OutcomeSucceeded || atts[0].Worker != "stopping" {
			t.Fatalf("history %+v, %v: want attempt 1 succeeded on the stopping instance", atts, err)
		}
		if took < work || took > cfg.ShutdownTimeout {
			t.Fatalf("Stop took %s, want between the attempt's %s and ShutdownTimeout %s", took, work, cfg.ShutdownTimeout)
		}
		t.Logf("Stop took %s; overlaps 0; attempt 1 recorded", took.Round(time.Millisecond))
	})
}

// A renewal that finds the lease gone cancels the attempt at once, with
// cause ErrLeaseLost, does not extend the row for its new holder, and writes
// no outcome over it. Two ways to lose it: another owner took the row at
// the same attempt number (the owner fence), or the row was taken back and
// claimed again for a later attempt, by this very instance (the attempt
// fence).
func TestLostLeaseCancelsAttempt(t *testing.T) {
	steals := []struct {
		name  string
		query string // args: new lease_until, id
		owner func(rt *Runtime) string
		times int
	}{
		{"other-owner", "UPDATE argo_task SET lease_owner = 'thief', lease_until = ? WHERE id = ?", func(*Runtime) string { return "thief" }, 1},
		{"later-attempt", "UPDATE argo_task SET execute_times = execute_times + 1, lease_until = ? WHERE id = ?", func(rt *Runtime) string { return rt.InstanceID() }, 2},
	}
	forEachBackend(t, func(t *testing.T, dsn string) {
		for _, steal := range steals {
			t.Run(steal.name, func(t *testing.T) {
				cfg := testConfig(dsn)
				rt := startRuntime(t, cfg)
				db, insp := openDB(t, dsn)
				started := make(chan struct{}, 1)
				cause := make(chan error, 1)
				def := &TaskDef{Name: "stolen-" + steal.name, Policy: fastPolicy(5), Run: func(ctx context.Context, args []byte) error {
					started <- struct{}{}
					select {
					case <-ctx.Done():
						cause <- context.Cause(ctx)
					case <-time.After(15 * time.Second):
						cause <- errors.New("never canceled")
					}
					return nil // would be recorded as a success if the outcome were written
				}}
				if err := rt.Register(def); err != nil {
					t.Fatal(err)
				}
				id := submitStarted(t, rt, def, started)
				theirs := toMillis(time.Now().Add(time.Hour))
				if _, err := db.Exec(steal.query, theirs, id); err != nil {
					t.Fatal(err)
				}
				stolenAt := time.Now()
				// The next renewal (every LeaseDuration/3) must find it gone.
				select {
				case err := <-cause:
					if !errors.Is(err, ErrLeaseLost) {
						t.Fatalf("attempt context ended with %v, want cause ErrLeaseLost", err)
					}
				case <-time.After(cfg.LeaseDuration/3 + 2*time.Second):
					t.Fatalf("attempt not canceled %s after its lease was taken", time.Since(stolenAt).Round(time.Millisecond))
				}
				t.Logf("attempt canceled %s after its lease was taken", time.Since(stolenAt).Round(time.Millisecond))
				waitFor(t, 5*time.Second, "the attempt to let go of its lease", func() bool { return len(rt.leases.list()) == 0 })
				// One more renewal round: the row must stay as its new holder set it.
				rt.renewLeases()
				task, err := insp.Get(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				if task.State != StateRunning || task.LeaseOwner != steal.owner(rt) || task.LeaseUntil != theirs || task.ExecuteTimes != steal.times {
					t.Fatalf("row after the loss: %s owner %q lease_until %d (want %d) execute_times %d: the new holder's lease must be left alone", task.State, task.LeaseOwner, task.LeaseUntil, theirs, task.ExecuteTimes)
				}
				atts, err := insp.Attempts(context.Background(), id)
				if err != nil || len(atts) != 0 {
					t.Fatalf("history %+v, %v: want no outcome written for the lost attempt", atts, err)
				}
			})
		}
	})
}

// A sync attempt (run in the caller's goroutine) is canceled at the shutdown
// deadline like any other, and its task given back without counting it.
func TestStopCancelsSyncAttempt(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig(dsn)
		cfg.ShutdownTimeout = 300 * time.Millisecond
		rt := startRuntime(t, cfg)
		started := make(chan struct{}, 1)
		def := &TaskDef{Name: "sync-at-stop", Thread: Sync, Policy: fastPolicy(5), Run: func(ctx context.Context, args []byte) error {
			started <- struct{}{}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(15 * time.Second):
				return errors.New("never canceled")
			}
		}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		res := submitSyncStarted(t, rt, def, started)
		began := time.Now()
		if err := rt.Stop(context.Background()); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if took := time.Since(began); took > cfg.ShutdownTimeout+2*time.Second {
			t.Fatalf("Stop took %s with ShutdownTimeout %s", took, cfg.ShutdownTimeout)
		}
		var r submitResult
		select {
		case r = <-res:
		case <-time.After(5 * time.Second):
			t.Fatal("Submit did not return after Stop")
		}
		var ae *AttemptError
		if !errors.As(r.err, &ae) || !ae.WillRetry || !errors.Is(r.err, context.Canceled) {
			t.Fatalf("Submit = %v, want an *AttemptError that will retry, wrapping context.Canceled", r.err)
		}
		_, insp := openDB(t, dsn)
		task, err := insp.Get(context.Background(), r.id)
		if err != nil {
			t.Fatal(err)
		}
		if task.State != StatePending || task.ExecuteTimes != 0 || task.LeaseOwner != "" {
			t.Fatalf("after Stop: %s execute_times %d owner %q, want pending, not counted, no owner", task.State, task.ExecuteTimes, task.LeaseOwner)
		}
	})
}

// An attempt that ignores cancellation: Stop returns within its context with
// an error naming it, the lease stays renewed until the function returns, and
// the alert its failure then fires neither crashes nor runs its action.
func TestStopNamesAttemptThatIgnoresCancellation(t *testing.T) {
	dsn := testdb.SQLiteDSN(t)
	cfg := testConfig(dsn)
	cfg.ShutdownTimeout = 100 * time.Millisecond
	cfg.LeaseDuration = 900 * time.Millisecond
	rt := startRuntime(t, cfg)
	_, insp := openDB(t, dsn)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	var actions atomic.Int32
	def := &TaskDef{Name: "stubborn", Policy: fastPolicy(5), Alert: "executeTimes >= 1",
		Run: func(ctx context.Context, args []byte) error {
			started <- struct{}{}
			select {
			case <-release: // ignores ctx
			case <-time.After(15 * time.Second):
			}
			return errors.New("failed after Stop")
		},
		AlertAction: func(ctx context.Context, ev AlertEvent) error { actions.Add(1); return nil },
	}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	id := submitStarted(t, rt, def, started)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	began := time.Now()
	err := rt.Stop(ctx)
	took := time.Since(began)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("task %d (stubborn) attempt 1", id)) {
		t.Fatalf("Stop = %v, want an error naming task %d (stubborn) attempt 1", err, id)
	}
	if took > time.Second+300*time.Millisecond {
		t.Fatalf("Stop took %s, past its 1s context", took)
	}
	t.Logf("Stop(ctx 1s) returned after %s: %v", took.Round(time.Millisecond), err)
	// Stop has returned; the function still runs: its lease must go on
	// being renewed (it would expire LeaseDuration after the last renewal).
	first, err := insp.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*cfg.LeaseDuration, "the lease to be renewed after Stop returned", func() bool {
		task, err := insp.Get(context.Background(), id)
		return err == nil && task.LeaseUntil > first.LeaseUntil+Millis(cfg.LeaseDuration.Milliseconds())
	})
	if task, _ := insp.Get(context.Background(), id); task.State != StateRunning || task.LeaseUntil.Time().Before(time.Now()) {
		t.Fatalf("task %s lease_until %s: want running under a live lease", task.State, task.LeaseUntil.Time())
	}
	close(release) // fails now and fires its alert: after Stop, that must not crash
	waitFor(t, 5*time.Second, "the failure after Stop to be recorded", func() bool {
		task, err := insp.Get(context.Background(), id)
		return err == nil && task.State == StateRetrying
	})
	waitFor(t, 5*time.Second, "the runtime to let go of its last lease", func() bool { return len(rt.leases.list()) == 0 })
	if n := actions.Load(); n != 0 {
		t.Fatalf("%d alert actions ran after Stop", n)
	}
}

// Queued alert actions do not hold Stop past its context: Stop(ctx 1 s) with
// slow actions queued returns within 1 s (plus scheduling slack), and the
// running action sees its context canceled.
func TestStopBoundsQueuedAlertActions(t *testing.T) {
	cfg := testConfig(testdb.SQLiteDSN(t))
	cfg.AlertWorkers, cfg.AlertTimeout = 1, 10*time.Second
	rt := startRuntime(t, cfg)
	var running, abandoned atomic.Int32
	def := &TaskDef{Name: "slow-alert", Policy: fastPolicy(1), Alert: "exhausted",
		Run: func(ctx context.Context, args []byte) error { return Permanent(errors.New("no")) },
		AlertAction: func(ctx context.Context, ev AlertEvent) error {
			running.Add(1)
			<-ctx.Done()
			abandoned.Add(1)
			return ctx.Err()
		},
	}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	const tasks = 5
	var ids []int64
	for range tasks {
		id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		waitState(t, rt, id, StateDead, 5*time.Second)
	}
	waitFor(t, 5*time.Second, "the first alert action to run", func() bool { return running.Load() == 1 })
	if q := len(rt.alerts.queue); q != tasks-1 {
		t.Fatalf("%d alert actions queued, want %d", q, tasks-1)
	}
	const within = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	began := time.Now()
	rt.Stop(ctx)
	took := time.Since(began)
	if took > within+300*time.Millisecond {
		t.Fatalf("Stop(ctx %s) with queued alert actions took %s", within, took)
	}
	t.Logf("Stop(ctx %s) with %d slow alert actions queued took %s", within, tasks-1, took.Round(time.Millisecond))
	// The running action sees its context canceled; it returns on its own
	// goroutine, which Stop does not wait for.
	waitFor(t, 5*time.Second, "the running alert action to be canceled", func() bool { return abandoned.Load() == 1 })
	if running.Load() != 1 {
		t.Fatalf("actions run %d: want only the first; the queued ones dropped", running.Load())
	}
	if n := rt.alerts.dropped.Load(); n != tasks-1 {
		t.Fatalf("dropped %d queued actions, want %d", n, tasks-1)
	}
}

// Stop hands the maintenance role over at once, and the role outlives its
// renewal period.
func TestMaintenanceRoleHandedOverAtStop(t *testing.T) {
	if d, _ := (Config{DSN: "sqlite:x"}).withDefaults(); maintenanceTTL(d) <= d.RescueInterval {
		t.Fatalf("with the defaults the role expires after %s but is renewed every %s", maintenanceTTL(d), d.RescueInterval)
	}
	forEachBackend(t, func(t *testing.T, dsn string) {
		db, _ := openDB(t, dsn)
		holder := func() (string, Millis) {
			var h string
			var exp Millis
			err := db.QueryRow("SELECT holder, expires_at FROM argo_leader WHERE name = 'maintenance'").Scan(&h, &exp)
			if errors.Is(err, sql.ErrNoRows) {
				return "", 0
			}
			if err != nil {
				t.Fatal(err)
			}
			return h, exp
		}
		cfg := testConfig(dsn)
		cfg.RescueInterval = time.Second
		cfg1, cfg2 := cfg, cfg
		cfg1.InstanceID, cfg2.InstanceID = "leader-1", "leader-2"
		rt1 := startRuntime(t, cfg1)
		waitFor(t, 5*time.Second, "leader-1 to hold the maintenance role", func() bool { h, _ := holder(); return h == "leader-1" })
		var exp Millis
		waitFor(t, 5*time.Second, "a renewal of the role", func() bool {
			var h string
			h, exp = holder()
			return h == "leader-1" && exp.Time().After(time.Now().Add(cfg.RescueInterval))
		})
		if ttl := maintenanceTTL(rt1.cfg); ttl <= cfg.RescueInterval {
			t.Fatalf("role expiry %s not longer than its renewal period %s", ttl, cfg.RescueInterval)
		}
		rt2 := startRuntime(t, cfg2)
		if err := rt1.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if h, exp := holder(); h == "leader-1" {
			t.Fatalf("after Stop leader-1 still holds the role until %s", exp.Time())
		}
		// leader-2 asks every RescueInterval: it takes the role well before
		// leader-1's would have expired.
		waitFor(t, time.Until(exp.Time())-200*time.Millisecond, "leader-2 to take the role before leader-1's expiry", func() bool { h, _ := holder(); return h == "leader-2" })
		_ = rt2
	})
}

// Right after an outage every lease looks expired, only because nobody could
// renew it: the rescuer waits one LeaseDuration (health.settled) so that live
// instances renew first. Without that wait a running, healthy attempt is
// rescued (counted as failed, canceled, run again).
func TestNoRescueRightAfterOutage(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig(dsn)
		cfg.LeaseDuration, cfg.RescueInterval = 3*time.Second, 20*time.Millisecond
		cfg.InstanceID = "survivor"
		rt := startRuntime(t, cfg)
		db, insp := openDB(t, dsn)
		waitFor(t, 5*time.Second, "the maintenance role", func() bool {
			var h string
			return db.QueryRow("SELECT holder FROM argo_leader WHERE name = 'maintenance'").Scan(&h) == nil && h == "survivor"
		})
		started := make(chan struct{}, 1)
		release := make(chan struct{})
		var canceled atomic.Bool
		def := &TaskDef{Name: "through-outage", Policy: fastPolicy(5), Run: func(ctx context.Context, args []byte) error {
			started <- struct{}{}
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				canceled.Store(true)
				return ctx.Err()
			}
		}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		id := submitStarted(t, rt, def, started)
		// An outage as long as a lease: renewals missed, the lease lapsed.
		// (Set under the lock at once: the poller may end it any moment.)
		rt.health.mu.Lock()
		rt.health.down, rt.health.announced = true, true
		rt.health.since, rt.health.backoff = time.Now().Add(-cfg.LeaseDuration), cfg.PollInterval
		rt.health.mu.Unlock()
		if _, err := db.Exec("UPDATE argo_task SET lease_until = ? WHERE id = ?", toMillis(time.Now().Add(-time.Millisecond)), id); err != nil {
			t.Fatal(err)
		}
		rt.health.ok(rt) // the database answers again
		waitFor(t, cfg.LeaseDuration, "the lease to be renewed after the outage", func() bool {
			task, err := insp.Get(context.Background(), id)
			return err == nil && task.LeaseUntil.Time().After(time.Now())
		})
		atts, err := insp.Attempts(context.Background(), id)
		if err != nil || len(atts) != 0 {
			t.Fatalf("history %+v, %v: the running attempt was rescued right after the outage", atts, err)
		}
		close(release)
		task := waitState(t, rt, id, StateSucceeded, 5*time.Second)
		if task.ExecuteTimes != 1 || canceled.Load() {
			t.Fatalf("execute_times %d, canceled %v: want one attempt, never canceled", task.ExecuteTimes, canceled.Load())
		}
	})
}

// A sync caller whose attempt lost its lease is told so (ErrLeaseLost), not
// handed a success whose outcome was never written.
func TestLostLeaseToldToSyncCaller(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfig(dsn))
		db, insp := openDB(t, dsn)
		started := make(chan struct{}, 1)
		def := &TaskDef{Name: "sync-stolen", Thread: Sync, Policy: fastPolicy(5), Run: func(ctx context.Context, args []byte) error {
			started <- struct{}{}
			select {
			case <-ctx.Done():
			case <-time.After(15 * time.Second):
			}
			return nil
		}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		res := submitSyncStarted(t, rt, def, started)
		if _, err := db.Exec("UPDATE argo_task SET lease_owner = 'thief', lease_until = ? WHERE task_id = 'sync-stolen'", toMillis(time.Now().Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		var r submitResult
		select {
		case r = <-res:
		case <-time.After(5 * time.Second):
			t.Fatal("Submit did not return within 5s of the lease being taken")
		}
		var ae *AttemptError
		if !errors.As(r.err, &ae) || !errors.Is(r.err, ErrLeaseLost) {
			t.Fatalf("Submit = %v, want an *AttemptError wrapping ErrLeaseLost", r.err)
		}
		if atts, err := insp.Attempts(context.Background(), r.id); err != nil || len(atts) != 0 {
			t.Fatalf("history %+v, %v: want no outcome written for the lost attempt", atts, err)
		}
	})
}

// A started held retry waiting for a free worker (runWhenFree) keeps its
// lease renewed: it is not rescued however long the wait.
func TestHeldRetryWaitingForWorkerKeepsLease(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig(dsn)
		cfg.Workers, cfg.LeaseDuration, cfg.RescueInterval = 1, 900*time.Millisecond, 50*time.Millisecond
		rt := startRuntime(t, cfg)
		_, insp := openDB(t, dsn)
		release := make(chan struct{})
		blocking := make(chan struct{}, 1)
		blocker := &TaskDef{Name: "blocker", Policy: fastPolicy(1), Run: func(ctx context.Context, args []byte) error {
			blocking <- struct{}{}
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
		var runs atomic.Int32
		retried := &TaskDef{Name: "held", Policy: RetryPolicy{MaxAttempts: 3, Backoff: BackoffFixed, Initial: 300 * time.Millisecond, Jitter: Jitter{Kind: JitterNone}},
			Run: func(ctx context.Context, args []byte) error {
				if runs.Add(1) == 1 {
					return errors.New("fails once")
				}
				return nil
			}}
		if err := rt.Register(blocker, retried); err != nil {
			t.Fatal(err)
		}
		id, err := rt.Submit(context.Background(), Call{Task: retried, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, rt, id, StateRetrying, 5*time.Second)
		if _, err := rt.Submit(context.Background(), Call{Task: blocker, Args: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-blocking:
		case <-time.After(5 * time.Second):
			t.Fatal("the blocker did not start within 5s")
		}
		// The retry's start is written when due; then it waits for the worker.
		var startedLease Millis
		waitFor(t, 5*time.Second, "the held retry to be started", func() bool {
			task, err := insp.Get(context.Background(), id)
			if err == nil && task.State == StateRunning && task.ExecuteTimes == 2 {
				startedLease = task.LeaseUntil
				return true
			}
			return false
		})
		waitFor(t, 4*cfg.LeaseDuration, "the waiting retry's lease to be renewed past two lease lengths", func() bool {
			task, err := insp.Get(context.Background(), id)
			return err == nil && task.State == StateRunning && task.LeaseUntil > startedLease+2*Millis(cfg.LeaseDuration.Milliseconds())
		})
		if n := runs.Load(); n != 1 {
			t.Fatalf("the retry ran (%d runs) while the only worker was busy", n)
		}
		close(release)
		task := waitState(t, rt, id, StateSucceeded, 5*time.Second)
		atts, err := insp.Attempts(context.Background(), id)
		if err != nil || task.ExecuteTimes != 2 || len(atts) != 2 || atts[1].Outcome != OutcomeSucceeded {
			t.Fatalf("execute_times %d, history %+v, %v: want attempt 1 failed, attempt 2 succeeded, nothing rescued", task.ExecuteTimes, atts, err)
		}
	})
}

// submitResult is what a Submit run on its own goroutine returned.
type submitResult struct {
	id  int64
	err error
}

// submitSyncStarted submits a call of the sync task def on its own goroutine
// and waits (5 s at most) until its attempt signals started; the Submit's
// result arrives on the returned channel.
func submitSyncStarted(t *testing.T, rt *Runtime, def *TaskDef, started <-chan struct{}) <-chan submitResult {
	t.Helper()
	res := make(chan submitResult, 1)
	go func() {
		id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
		res <- submitResult{id, err}
	}()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the sync attempt did not start within 5s")
	}
	return res
}

// submitStarted submits a call of def and waits (5 s at most) until its
// attempt signals started; it returns the task id.
func submitStarted(t *testing.T, rt *Runtime, def *TaskDef, started <-chan struct{}) int64 {
	t.Helper()
	id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the attempt did not start within 5s")
	}
	return id
}
