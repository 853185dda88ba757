package runtime

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Cancel (docs/cancel.md): a running attempt stopped on the instance that
// runs it, a waiting task ended before it runs, the race with a finish.

// cancelBound is how soon after a cancel commits the instance running the
// attempt must cancel its context: its next renewal (LeaseDuration/3) plus
// a second for a loaded machine.
func cancelBound(cfg Config) time.Duration { return cfg.LeaseDuration/3 + time.Second }

// checkCancelled checks the rows a cancel of task id leaves: discarded with
// the reason, one trail record, and (ranAttempt > 0) attempt ranAttempt
// recorded cancelled by worker.
func checkCancelled(t *testing.T, in *Inspector, id int64, reason string, ranAttempt int, worker string) {
	t.Helper()
	ctx := context.Background()
	task, err := in.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if task.State != StateDiscarded || task.DiscardReason != "cancelled: "+reason || task.LeaseOwner != "" {
		t.Fatalf("task after the cancel: %s reason %q owner %q, want discarded, %q, no owner", task.State, task.DiscardReason, task.LeaseOwner, "cancelled: "+reason)
	}
	trail, err := in.Trail(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var cancels int
	for _, a := range trail {
		if a.Action == ActionCancel && a.Reason == reason {
			cancels++
		}
	}
	if cancels != 1 {
		t.Fatalf("trail %+v: want one %s record with reason %q", trail, ActionCancel, reason)
	}
	atts, err := in.Attempts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var cancelled []Attempt
	for _, a := range atts {
		if a.Outcome == OutcomeCancelled {
			cancelled = append(cancelled, a)
		}
		if a.Outcome == OutcomeSucceeded || a.Kind == "fallback" {
			t.Fatalf("history %+v: a cancelled task has no success and no fallback", atts)
		}
	}
	switch {
	case ranAttempt == 0 && len(cancelled) != 0:
		t.Fatalf("history %+v: no attempt ran at the cancel, want no cancelled attempt", atts)
	case ranAttempt > 0 && (len(cancelled) != 1 || cancelled[0].Attempt != ranAttempt || cancelled[0].Worker != worker):
		t.Fatalf("history %+v: want attempt %d recorded cancelled, worker %s", atts, ranAttempt, worker)
	}
}

// Instance A runs an attempt; instance B's Inspector cancels the task. A
// cancels the attempt's context (cause ErrCancelled) within the renewal
// period, writes no outcome, no retry runs (on A or B, both registered) and
// the fallback never runs.
func TestCancelRunningAttemptAcrossInstances(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfgA, cfgB := testConfigT(t, dsn), testConfigT(t, dsn)
		cfgA.InstanceID, cfgB.InstanceID = "cancel-a", "cancel-b"
		a, b := startRuntime(t, cfgA), startRuntime(t, cfgB)
		probe, def := newCancelProbe("cancel-running", 30*time.Second)
		runs, fallbacks, started, cause := &probe.runs, &probe.fallbacks, probe.started, probe.cause
		// B registers once the attempt runs on A: a submit that finds A's
		// workers reserved by its poller's claim leaves the call to the
		// pollers, and B's could take it (seen in a loaded make test).
		if err := a.Register(def); err != nil {
			t.Fatal(err)
		}
		id := submitStarted(t, a, def, started)
		if err := b.Register(def); err != nil {
			t.Fatal(err)
		}
		res, err := b.Inspector().Cancel(context.Background(), id, "customer withdrew")
		if err != nil {
			t.Fatal(err)
		}
		cancelledAt := time.Now()
		if res.From != StateRunning || res.Attempt != 1 || res.Worker != "cancel-a" {
			t.Fatalf("Cancel = %+v, want from running, attempt 1, worker cancel-a", res)
		}
		select {
		case err := <-cause:
			if !errors.Is(err, ErrCancelled) {
				t.Fatalf("attempt context ended with %v, want cause ErrCancelled", err)
			}
		case <-time.After(cancelBound(cfgA)):
			t.Fatalf("attempt not canceled %s after the cancel committed", time.Since(cancelledAt).Round(time.Millisecond))
		}
		t.Logf("attempt canceled %s after the cancel committed", time.Since(cancelledAt).Round(time.Millisecond))
		// The attempt has returned a failure: once A has let go of the
		// lease its outcome was either written or dropped.
		waitFor(t, 5*time.Second, "A to let go of the lease", func() bool { return len(a.leases.list()) == 0 })
		checkCancelled(t, b.Inspector(), id, "customer withdrew", 1, "cancel-a")
		if n, f := runs.Load(), fallbacks.Load(); n != 1 || f != 0 {
			t.Fatalf("%d runs and %d fallbacks, want 1 and 0", n, f)
		}
		if _, err := b.Inspector().Cancel(context.Background(), id, "again"); !errors.Is(err, ErrTransitionInvalid) || !strings.Contains(err.Error(), "already finished") {
			t.Fatalf("second Cancel = %v, want already finished (ErrTransitionInvalid)", err)
		}
	})
}

// A sync caller whose attempt is cancelled gets an *AttemptError wrapping
// ErrCancelled that says no retry follows.
func TestCancelToldToSyncCaller(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfigT(t, dsn)
		rt := startRuntime(t, cfg)
		_, insp := openDB(t, dsn)
		started := make(chan struct{}, 1)
		def := &TaskDef{Name: "cancel-sync", Thread: Sync, Policy: fastPolicy(5), Run: func(ctx context.Context, args []byte) error {
			started <- struct{}{}
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Second):
			}
			return nil
		}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		res := submitSyncStarted(t, rt, def, started)
		tasks, err := insp.List(context.Background(), Filter{Name: "cancel-sync"})
		if err != nil || len(tasks) != 1 {
			t.Fatalf("List = %d tasks, %v", len(tasks), err)
		}
		if _, err := insp.Cancel(context.Background(), tasks[0].ID, "stop it"); err != nil {
			t.Fatal(err)
		}
		var r submitResult
		select {
		case r = <-res:
		case <-time.After(cancelBound(cfg)):
			t.Fatal("Submit did not return within the renewal period of the cancel")
		}
		var ae *AttemptError
		if !errors.As(r.err, &ae) || !errors.Is(r.err, ErrCancelled) || ae.WillRetry {
			t.Fatalf("Submit = %v, want an *AttemptError wrapping ErrCancelled, WillRetry false", r.err)
		}
		checkCancelled(t, insp, r.id, "stop it", 1, rt.InstanceID())
	})
}

// A pending task (not due yet), a retrying one and a held retry (its
// instance holds it for its due time) are cancelled without running again,
// and a blocked one's dependents are skipped, as for a discard.
func TestCancelWaitingTaskNeverRuns(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfigT(t, dsn)
		rt := startRuntime(t, cfg)
		in := rt.Inspector()
		ctx := context.Background()
		var runs atomic.Int32
		fail := &TaskDef{Name: "cancel-waiting", Policy: fastPolicy(5), Run: func(ctx context.Context, args []byte) error {
			runs.Add(1)
			return errors.New("fails")
		}}
		if err := rt.Register(fail); err != nil {
			t.Fatal(err)
		}

		// Pending, due in an hour.
		later := &TaskDef{Name: "cancel-later", Mode: Scheduled, Delay: time.Hour, Policy: fastPolicy(5), Run: func(context.Context, []byte) error {
			runs.Add(1)
			return nil
		}}
		if err := rt.Register(later); err != nil {
			t.Fatal(err)
		}
		pending, err := rt.Submit(ctx, Call{Task: later, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := in.Cancel(ctx, pending, "not needed"); err != nil || res.From != StatePending {
			t.Fatalf("Cancel(pending) = %+v, %v", res, err)
		}
		checkCancelled(t, in, pending, "not needed", 0, "")

		// Retrying: the first attempt fails, the retry is due in an hour.
		slow := *fail
		slow.Name, slow.Policy = "cancel-retrying", RetryPolicy{MaxAttempts: 5, Backoff: BackoffFixed, Initial: time.Hour, Jitter: Jitter{Kind: JitterNone}}
		if err := rt.Register(&slow); err != nil {
			t.Fatal(err)
		}
		retrying, err := rt.Submit(ctx, Call{Task: &slow, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, rt, retrying, StateRetrying, 10*time.Second)
		if res, err := in.Cancel(ctx, retrying, "gave up"); err != nil || res.From != StateRetrying {
			t.Fatalf("Cancel(retrying) = %+v, %v", res, err)
		}
		checkCancelled(t, in, retrying, "gave up", 0, "")

		// A held retry: due within RetryHold, its instance starts it from a
		// timer at its due time; the cancel lands before.
		held := *fail
		held.Name, held.Policy = "cancel-held", RetryPolicy{MaxAttempts: 5, Backoff: BackoffFixed, Initial: cfg.LeaseDuration / 2, Jitter: Jitter{Kind: JitterNone}}
		if err := rt.Register(&held); err != nil {
			t.Fatal(err)
		}
		before := runs.Load()
		heldID, err := rt.Submit(ctx, Call{Task: &held, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		task := waitState(t, rt, heldID, StateRetrying, 10*time.Second)
		if task.LeaseOwner != rt.InstanceID() {
			t.Fatalf("retry not held: owner %q", task.LeaseOwner)
		}
		if _, err := in.Cancel(ctx, heldID, "held one"); err != nil {
			t.Fatal(err)
		}
		due := task.ExecuteTime.Time()
		// Past its due time, and the hold let go: the timer fired and the
		// start was refused.
		waitFor(t, cfg.LeaseDuration+5*time.Second, "the held retry's due time to pass and its hold to end", func() bool {
			return time.Now().After(due.Add(cfg.PollInterval)) && len(rt.leases.list()) == 0
		})
		if got := runs.Load() - before; got != 1 {
			t.Fatalf("the held task ran %d times, want 1 (its first attempt only)", got)
		}
		checkCancelled(t, in, heldID, "held one", 0, "")
	})
}

// The race with a finishing attempt, both ways: an attempt that succeeded
// before the cancel landed keeps its success (the cancel is refused,
// "already finished"); an attempt that returns success after the cancel
// landed is not recorded (the task stays cancelled).
func TestCancelRaceWithFinishingAttempt(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfigT(t, dsn)
		rt := startRuntime(t, cfg)
		in := rt.Inspector()
		ctx := context.Background()
		release := make(chan struct{})
		started := make(chan struct{}, 2)
		def := &TaskDef{Name: "cancel-race", Policy: fastPolicy(5), Run: func(ctx context.Context, args []byte) error {
			started <- struct{}{}
			<-release // ignores its context: returns success whenever released
			return nil
		}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}

		// Finish first.
		first := submitStarted(t, rt, def, started)
		release <- struct{}{}
		waitState(t, rt, first, StateSucceeded, 10*time.Second)
		if _, err := in.Cancel(ctx, first, "too late"); !errors.Is(err, ErrTransitionInvalid) || !strings.Contains(err.Error(), "already finished") {
			t.Fatalf("Cancel after the success = %v, want already finished (ErrTransitionInvalid)", err)
		}
		if trail, _ := in.Trail(ctx, first); len(trail) != 0 {
			t.Fatalf("trail %+v: a refused cancel records nothing", trail)
		}

		// Cancel first: the function returns success after the cancel.
		second := submitStarted(t, rt, def, started)
		if _, err := in.Cancel(ctx, second, "in time"); err != nil {
			t.Fatal(err)
		}
		release <- struct{}{}
		waitFor(t, 10*time.Second, "the attempt to let go of its lease", func() bool { return len(rt.leases.list()) == 0 })
		checkCancelled(t, in, second, "in time", 1, rt.InstanceID())
	})
}

// CancelWhere cancels a tenant's (or a flow group's members') cancellable
// tasks, bounded by Filter.Limit, and refuses no reason.
func TestCancelWhereBounded(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfigT(t, dsn))
		in := rt.Inspector()
		ctx := context.Background()
		def := &TaskDef{Name: "cancel-bulk", Mode: Scheduled, Delay: time.Hour, Policy: fastPolicy(3), Run: func(context.Context, []byte) error { return nil }}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			if _, err := rt.Submit(ctx, Call{Task: def, Args: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := in.CancelWhere(ctx, Filter{Name: "cancel-bulk"}, " ", false); err == nil {
			t.Fatal("CancelWhere without a reason accepted")
		}
		n, err := in.CancelWhere(ctx, Filter{Name: "cancel-bulk", Limit: 3}, "bulk", true)
		if err != nil || n != 3 {
			t.Fatalf("dry run = %d, %v, want 3", n, err)
		}
		if n, err = in.CancelWhere(ctx, Filter{Name: "cancel-bulk", Limit: 3}, "bulk", false); err != nil || n != 3 {
			t.Fatalf("CancelWhere = %d, %v, want 3", n, err)
		}
		if n, err = in.CancelWhere(ctx, Filter{Name: "cancel-bulk"}, "bulk", false); err != nil || n != 2 {
			t.Fatalf("second CancelWhere = %d, %v, want the 2 left", n, err)
		}
		counts, err := in.CountByState(ctx)
		if err != nil || counts[StateDiscarded] != 5 {
			t.Fatalf("counts %v, %v: want 5 discarded", counts, err)
		}
	})
}

// A renewal that finds a claimed task cancelled before its function started
// marks the lease: the function's context is cancelled (cause ErrCancelled)
// before it runs, and done reports the loss.
func TestCancelledLeaseStartsNothing(t *testing.T) {
	var l leaseSet
	k := leaseKey{ID: 7, Attempt: 1}
	l.add(k, time.Now())
	defer l.remove(k)
	if r := l.cancelled(k); r != nil {
		t.Fatalf("cancelled = %v, want nil: no function runs yet", r)
	}
	ctx, run := l.start(context.Background(), k, "t", "attempt")
	if ctx.Err() == nil || !errors.Is(context.Cause(ctx), ErrCancelled) {
		t.Fatalf("the function's context: %v (cause %v), want cancelled with ErrCancelled before it starts", ctx.Err(), context.Cause(ctx))
	}
	if !l.done(k, run) {
		t.Fatal("done does not report the cancelled lease as lost")
	}
}

// cancelProbe is a task whose attempt waits for its context and reports
// why it ended (cause), counting its runs and fallback runs; an attempt
// not canceled within wait reports "never canceled". Its error, were it
// written, would retry and then fall back.
type cancelProbe struct {
	runs, fallbacks atomic.Int32
	started         chan struct{}
	cause           chan error
}

func newCancelProbe(name string, wait time.Duration) (*cancelProbe, *TaskDef) {
	p := &cancelProbe{started: make(chan struct{}, 4), cause: make(chan error, 4)}
	def := &TaskDef{Name: name, Policy: fastPolicy(5), Run: func(ctx context.Context, args []byte) error {
		p.runs.Add(1)
		p.started <- struct{}{}
		select {
		case <-ctx.Done():
			p.cause <- context.Cause(ctx)
		case <-time.After(wait):
			p.cause <- errors.New("never canceled")
		}
		return errors.New("failed after the cancel")
	}, Fallback: func(ctx context.Context, args []byte, lastErr error) error {
		p.fallbacks.Add(1)
		return nil
	}}
	return p, def
}
