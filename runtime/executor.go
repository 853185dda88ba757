package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/argo-retry/argo/internal/maintenance"
	"github.com/argo-retry/argo/internal/storage"
)

// goAttempt runs a claimed task on the pool; the caller holds a
// reservation (reserve). With poke, the poller is woken when its worker is
// free, so the worker takes the next due task without waiting for the tick.
func (rt *Runtime) goAttempt(t *Task, h *TaskDef, poke bool) {
	go func() {
		_ = rt.run(context.Background(), t, h, false, poke)
	}()
}

// runAttempt runs one leased task (an attempt, or the fallback of an
// exhausted task) and records the outcome. The caller holds a reservation
// (reserve, or reserveSync for the caller's own goroutine, which takes no
// worker slot), which runAttempt ends. The returned error is for a sync caller.
func (rt *Runtime) runAttempt(callerCtx context.Context, t *Task, h *TaskDef, sync bool) error {
	return rt.run(callerCtx, t, h, sync, false)
}

// workerSlot is an attempt's hold on a worker slot. The slot is freed as soon
// as the task's function returns: writing the outcome (batched by the
// completer) takes no worker, so the next due task starts meanwhile. At most
// maxRecording outcomes are written that way at once (Runtime.recording); beyond
// that an attempt keeps its slot until its outcome lands. The reservation
// itself (rt.attempts, which Stop waits for) ends only once the outcome is
// written.
type workerSlot struct {
	rt   *Runtime
	held bool
	poke bool
}

// maxRecording is how many attempts may have their outcome written without
// holding a worker: eight completion batches (1,024), or 4×Workers if more.
// It bounds the memory of attempts in flight when the database falls behind.
func maxRecording(workers int) int { return max(8*maintenance.CompleterBatchDefault, 4*workers) }

func (w *workerSlot) free() {
	if w.held {
		w.held = false
		w.rt.release()
		if w.poke {
			w.rt.poke()
		}
	}
}

// run is runAttempt; with poke, the poller is woken when the worker is freed.
func (rt *Runtime) run(callerCtx context.Context, t *Task, h *TaskDef, sync, poke bool) error {
	defer rt.attempts.Done()
	slot := &workerSlot{rt: rt, held: !sync, poke: poke}
	defer slot.free()
	lease := leaseKey{ID: t.ID, Shard: t.ShardKey, Attempt: t.ExecuteTimes}
	rt.leases.add(lease, rt.leaseSentAt(t.LeaseUntil))
	defer rt.leases.remove(lease)
	if t.State == StateFallingBack {
		rt.runFallback(t, h)
		return nil
	}
	f := fence{ID: t.ID, Shard: t.ShardKey, Owner: t.LeaseOwner, Attempt: t.ExecuteTimes, From: StateRunning, Downstream: t.HasDownstream}
	if h == nil {
		rt.giveBack(t, f, fmt.Sprintf("no handler registered for task %q on instance %s: deploy code that registers it (for generated code, call its ArgoRegister function), or discard the task with argoctl", t.Name, rt.cfg.InstanceID))
		return nil
	}
	pol, err := decodePolicy(t.RetryPolicyJSON)
	if err != nil {
		pol = h.policy()
		rt.log.Warn("argo: task has an unreadable retry policy; using the handler's", "task_id", t.ID, "task", t.Name, "error", err)
	}
	started := rt.now()
	lag := started.Sub(t.ExecuteTime.Time())
	parent := rt.workCtx
	if sync {
		// A sync attempt runs on the caller's behalf: keep its values, but not
		// its cancellation, which would abandon a persisted attempt half-way.
		// Shutdown cancels it like any other attempt (at Stop's deadline).
		var stopSync context.CancelFunc
		parent, stopSync = context.WithCancel(context.WithoutCancel(callerCtx))
		unhook := context.AfterFunc(rt.workCtx, stopSync)
		defer func() { unhook(); stopSync() }()
	}
	// Its progress reports ride on the lease renewals (progress.go).
	actx, progress := rt.attemptProgress(parent, t, lease)
	defer rt.progress.close(progress)
	// Canceled at once if a renewal finds the lease gone.
	ctx, running := rt.leases.start(actx, lease, t.Name, "attempt")
	var cancel context.CancelFunc = func() {}
	if pol.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, pol.Timeout)
	}
	// Past the shutdown deadline already (a held retry that got its worker
	// as Stop canceled the attempts): give it back unrun.
	var runErr error
	ctx, span := rt.startTaskSpan(ctx, t, "attempt")
	spanOutcome := spanOutcomeGivenBack
	defer func() { endTaskSpan(span, spanOutcome, runErr) }()
	ran := ctx.Err() == nil
	var called bool // the function was called (not only the fault injection's read)
	if ran {
		runErr = callSafely(func() error { return rt.runOrInject(ctx, t, h, &called) }) // fault_injection.go
	} else {
		runErr = context.Cause(ctx)
	}
	ctxErr := ctx.Err()
	cancel()
	finished := rt.now()
	final := progress.end() // later reports are refused
	if rt.leases.done(lease, running) {
		if !called && rt.leases.lapsedHere(lease) {
			// The lease lapsed here before the function started (a claim
			// whose answer came back late, a worker that came free late,
			// the fault injection's read not answered in time):
			// give the row back with its attempt undone, fenced on the
			// lease as claimed, rather than leave it to the rescuer, which
			// would charge an attempt that never ran. A row rescued or
			// changed meanwhile refuses the give-back.
			spanOutcome = spanOutcomeLeaseLost
			rt.giveBack(t, f, "")
			return &AttemptError{TaskID: t.ID, Attempt: t.ExecuteTimes, WillRetry: true, Err: fmt.Errorf("attempt not started: %w", ErrLeaseLost)}
		}
		// Another instance may be running this task now: whatever this
		// attempt did, its outcome is not ours to write.
		spanOutcome = spanOutcomeLeaseLost
		if errors.Is(context.Cause(ctx), ErrCancelled) { // cancel.go: no retry follows
			rt.log.Info("argo: attempt returned after its task was cancelled; its outcome is not recorded", "task_id", t.ID, "task", t.Name, "attempt", t.ExecuteTimes, "shard", t.ShardKey, "returned", errString(runErr))
			return &AttemptError{TaskID: t.ID, Attempt: t.ExecuteTimes, Err: fmt.Errorf("attempt canceled: %w", ErrCancelled)}
		}
		rt.log.Info("argo: attempt returned after losing its lease; its outcome is not recorded", "task_id", t.ID, "task", t.Name, "attempt", t.ExecuteTimes, "shard", t.ShardKey, "returned", errString(runErr))
		return &AttemptError{TaskID: t.ID, Attempt: t.ExecuteTimes, WillRetry: true, Err: fmt.Errorf("attempt canceled: %w", ErrLeaseLost)}
	}
	// Free the worker while the outcome is written, unless maxRecording
	// outcomes are being written already (the database is behind): then this
	// attempt keeps its worker until its outcome lands, which holds back
	// claims and bounds the memory of attempts in flight.
	if !sync && rt.recording.Add(1) <= int64(maxRecording(rt.cfg.Workers)) {
		slot.free()
	}
	if !sync {
		defer rt.recording.Add(-1)
	}

	if IsUndecodable(runErr) {
		rt.giveBack(t, f, undecodableMessage(t, runErr)) // cipher.go
		return nil
	}
	if runErr != nil && rt.workCtx.Err() != nil && errors.Is(runErr, context.Canceled) {
		// Stopped by shutdown, not by the task: give the attempt back.
		rt.giveBack(t, f, "")
		if sync {
			return &AttemptError{TaskID: t.ID, Attempt: t.ExecuteTimes, WillRetry: true, Err: fmt.Errorf("attempt interrupted by shutdown; the task runs again, this attempt not counted: %w", runErr)}
		}
		return nil
	}
	hist := &Attempt{TaskPK: t.ID, Attempt: t.ExecuteTimes, Kind: "attempt", Worker: rt.cfg.InstanceID, StartedAt: toMillis(started), FinishedAt: toMillis(finished),
		TraceID: spanTraceID(span)} // transitions.go
	final.fill(hist) // its last report, written with the outcome
	if runErr == nil {
		hist.Outcome = OutcomeSucceeded
		spanOutcome = hist.Outcome
		rt.learn(t.Name, false) // adaptive_backoff.go
		empty := ""
		rt.record(finishing{Fence: f, To: StateSucceeded, Due: t.ExecuteTime, ErrMsg: &empty, History: hist, Direct: sync})
		rt.flowOutcome(h, t, true)
		rt.observe(func(o Observer) {
			o.AttemptDone(t.Name, "attempt", OutcomeSucceeded, finished.Sub(started), lag)
			o.Finished(t.Name, StateSucceeded)
		})
		return nil
	}

	permanent := IsPermanent(runErr) || (rt.cfg.IsPermanent != nil && rt.cfg.IsPermanent(runErr))
	var pe *PanicError
	switch {
	case errors.As(runErr, &pe):
		hist.Outcome = OutcomePanicked
	case permanent:
		hist.Outcome = OutcomePermanent
	case errors.Is(ctxErr, context.DeadlineExceeded):
		hist.Outcome = OutcomeTimeout
		runErr = fmt.Errorf("attempt timed out after %s: %w", pol.Timeout, runErr)
	default:
		hist.Outcome = OutcomeFailed
	}
	msg, code := rt.codedError(runErr, runErr.Error())
	hist.Error, hist.ErrorCode = msg, code
	spanOutcome = hist.Outcome
	// A permanent error is the downstream's answer: not a failure to learn.
	rt.learn(t.Name, !permanent) // adaptive_backoff.go
	// The task's RetryStrategy, else its policy (retry_strategy.go).
	strategyDelay, willRetry := rt.nextRetry(FailedAttempt{TaskID: t.ID, TaskName: t.Name, Tenant: t.Tenant, Attempt: countedAttempt(t), Deferred: t.DeferredTimes, Err: runErr, Policy: pol}, permanent)
	// The callee said when to try again: then, without using one of the
	// policy's attempts. The attempt keeps its number (its idempotency key
	// was sent; the next attempt gets the next number and key) and is
	// recorded deferred; deferred_times grows, so that the policy does not
	// count it. For a retry budget, the next attempt is a retry.
	retryAfter, deferred := retryAfterOf(runErr)
	deferred = deferred && !permanent
	if deferred {
		willRetry = true
		hist.Outcome = OutcomeDeferred
		spanOutcome = hist.Outcome
	}
	fin := finishing{Fence: f, ErrMsg: &msg, History: hist, Direct: sync}
	var retryDelay time.Duration
	if willRetry {
		delay := strategyDelay
		if deferred {
			delay = retryAfter
		}
		retryDelay = delay
		hist.BackoffMs = delay.Milliseconds()
		fin.To, fin.Due = StateRetrying, toMillis(finished.Add(delay))
		fin.Deferred = deferred
		// A task under flow control restarts only through the gated claim.
		if h.Flow == nil && rt.canHold(delay) {
			fin.HoldUntil = toMillis(finished.Add(delay + rt.cfg.LeaseDuration))
		}
		rt.log.Warn("argo: attempt failed, will retry", "task_id", t.ID, "task", t.Name, "attempt", t.ExecuteTimes, "shard", t.ShardKey, "retry_in", delay, "error", msg, "tenant", t.Tenant, "trace_id", TraceID(t))
	} else {
		fin.To, fin.Due = StateExhausted, toMillis(finished)
		rt.log.Warn("argo: attempt failed, no retry left", "task_id", t.ID, "task", t.Name, "attempt", t.ExecuteTimes, "shard", t.ShardKey, "permanent", permanent, "error", msg, "tenant", t.Tenant, "trace_id", TraceID(t))
	}
	recorded := rt.record(fin)
	// A permanent error is the downstream's answer (it is up): for the
	// breaker, an attempt that went through.
	rt.flowOutcome(h, t, permanent)
	rt.observe(func(o Observer) {
		o.AttemptDone(t.Name, "attempt", hist.Outcome, finished.Sub(started), lag)
		o.Finished(t.Name, fin.To)
		if eo, ok := o.(ErrorCodeObserver); ok && code != "" {
			eo.AttemptErrorCode(t.Name, code)
		}
	})
	t.ErrorMsg = msg
	rt.checkAlert(h, t, pol, msg, permanent, willRetry)
	switch {
	case willRetry && recorded && fin.HoldUntil > 0:
		rt.hold(t, h, fin, finished.Add(retryDelay))
	case willRetry:
		rt.scheduleWake(fin.Due.Time())
	case recorded:
		rt.fallbackNow(t, h)
	}
	return &AttemptError{TaskID: t.ID, Attempt: t.ExecuteTimes, WillRetry: willRetry, Err: runErr}
}

// fallbackNow claims the task this worker just exhausted and runs its
// fallback at once, on this goroutine. If the claim fails, the poller will.
func (rt *Runtime) fallbackNow(t *Task, h *TaskDef) {
	if !rt.tryAcquire() {
		rt.poke()
		return
	}
	now := rt.now()
	ft, err := rt.store.ClaimByID(rt.ctx, t.ID, t.ShardKey, StateExhausted, rt.cfg.InstanceID, toMillis(now), toMillis(now.Add(rt.cfg.LeaseDuration)))
	if err != nil || ft == nil {
		rt.release()
		rt.poke()
		return
	}
	lease := leaseKey{ID: ft.ID, Shard: ft.ShardKey, Attempt: ft.ExecuteTimes}
	rt.leases.add(lease, rt.leaseSentAt(ft.LeaseUntil))
	defer rt.leases.remove(lease)
	defer rt.release()
	rt.runFallback(ft, h)
}

// fallbackCauseKey carries the last attempt's error into a fallback.
type fallbackCauseKey struct{}

// FallbackCause returns, inside a fallback, the error of the task's last
// attempt (nil elsewhere).
func FallbackCause(ctx context.Context) error {
	err, _ := ctx.Value(fallbackCauseKey{}).(error)
	return err
}

// runFallback runs the fallback of a falling_back task and ends it
// recovered (fallback succeeded) or dead (no fallback, or it failed).
func (rt *Runtime) runFallback(t *Task, h *TaskDef) {
	f := fence{ID: t.ID, Shard: t.ShardKey, Owner: t.LeaseOwner, Attempt: t.ExecuteTimes, From: StateFallingBack, Downstream: t.HasDownstream}
	if h == nil {
		msg := fmt.Sprintf("attempts exhausted, but no handler registered for task %q on instance %s to run its fallback: deploy code that registers it, or discard the task with argoctl", t.Name, rt.cfg.InstanceID)
		rt.record(finishing{Fence: f, To: StateExhausted, Due: toMillis(rt.now().Add(rt.cfg.UnknownTaskDelay)), FallbackErr: &msg})
		return
	}
	started := rt.now()
	hist := &Attempt{TaskPK: t.ID, Attempt: t.ExecuteTimes, Kind: "fallback", Worker: rt.cfg.InstanceID, StartedAt: toMillis(started)}
	if h.Fallback == nil {
		hist.Outcome, hist.Error, hist.FinishedAt = "no_fallback", "no fallback configured: the task is dead", hist.StartedAt
		rt.record(finishing{Fence: f, To: StateDead, Due: t.ExecuteTime, History: hist})
		rt.log.Error("argo: task dead", "task_id", t.ID, "task", t.Name, "attempt", t.ExecuteTimes, "shard", t.ShardKey, "error", t.ErrorMsg, "tenant", t.Tenant, "trace_id", TraceID(t))
		rt.observe(func(o Observer) { o.Finished(t.Name, StateDead) })
		return
	}
	args, openErr := rt.openTask(t) // cipher.go
	if openErr != nil {
		// Its arguments cannot be read here (a key missing): the fallback
		// waits, not run, like one without a handler.
		msg := fmt.Sprintf("attempts exhausted, but the fallback of task %d (%s) cannot run: %v", t.ID, t.Name, openErr)
		rt.log.Error("argo: fallback cannot run here; left exhausted", "task_id", t.ID, "task", t.Name, "retry_in", rt.cfg.UnknownTaskDelay, "error", msg)
		rt.record(finishing{Fence: f, To: StateExhausted, Due: toMillis(rt.now().Add(rt.cfg.UnknownTaskDelay)), FallbackErr: &msg})
		return
	}
	lease := leaseKey{ID: t.ID, Shard: t.ShardKey, Attempt: t.ExecuteTimes}
	ctx, running := rt.leases.start(context.WithValue(withAttempt(rt.workCtx, t.ID, t.ExecuteTimes, t.Name), fallbackCauseKey{}, errors.New(t.ErrorMsg)), lease, t.Name, "fallback")
	ctx, span := rt.startTaskSpan(ctx, t, "fallback")
	hist.TraceID = spanTraceID(span) // transitions.go
	var err error
	if ctx.Err() == nil {
		err = callSafely(func() error { return h.Fallback(ctx, args, errors.New(t.ErrorMsg)) })
	} else {
		// The lease lapsed here before the fallback started: it is not
		// called (its outcome could not be written); the rescuer runs it
		// again once the lease has ended.
		err = context.Cause(ctx)
	}
	defer func() { endTaskSpan(span, cmp.Or(hist.Outcome, spanOutcomeGivenBack), err) }()
	finished := rt.now()
	if rt.leases.done(lease, running) {
		rt.log.Info("argo: fallback returned after losing its lease; its outcome is not recorded", "task_id", t.ID, "task", t.Name, "attempt", t.ExecuteTimes, "shard", t.ShardKey, "returned", errString(err))
		return
	}
	hist.FinishedAt = toMillis(finished)
	if err != nil && rt.workCtx.Err() != nil && errors.Is(err, context.Canceled) {
		msg := "fallback interrupted by shutdown"
		rt.record(finishing{Fence: f, To: StateExhausted, Due: toMillis(finished), FallbackErr: &msg})
		return
	}
	to := StateRecovered
	fbErr := ""
	hist.Outcome = OutcomeSucceeded
	if err != nil {
		to, fbErr = StateDead, err.Error()
		var code string
		fbErr, code = rt.codedError(err, fbErr)
		hist.Outcome, hist.Error, hist.ErrorCode = OutcomeFailed, fbErr, code
		var pe *PanicError
		if errors.As(err, &pe) {
			hist.Outcome = OutcomePanicked
		}
	}
	rt.record(finishing{Fence: f, To: to, Due: t.ExecuteTime, FallbackErr: &fbErr, History: hist})
	if to == StateDead {
		rt.log.Error("argo: task dead: fallback failed", "task_id", t.ID, "task", t.Name, "attempt", t.ExecuteTimes, "shard", t.ShardKey, "error", t.ErrorMsg, "fallback_error", fbErr, "tenant", t.Tenant, "trace_id", TraceID(t))
	} else {
		rt.log.Info("argo: task recovered by fallback", "task_id", t.ID, "task", t.Name, "attempt", t.ExecuteTimes)
	}
	rt.observe(func(o Observer) {
		o.AttemptDone(t.Name, "fallback", hist.Outcome, finished.Sub(started), 0)
		o.Finished(t.Name, to)
	})
}

// giveBack releases a running task without counting the attempt: no
// handler, undecodable arguments (msg says which; the task waits
// UnknownTaskDelay) or shutdown (msg empty; due at once for another instance).
func (rt *Runtime) giveBack(t *Task, f fence, msg string) {
	to := StateRetrying
	if t.ExecuteTimes <= 1 {
		to = StatePending
	}
	due := rt.now()
	fin := finishing{Fence: f, To: to, UndoAttempt: true}
	if msg != "" {
		due = due.Add(rt.cfg.UnknownTaskDelay)
		fin.ErrMsg = &msg
		rt.log.Error("argo: task cannot run here; left pending", "task_id", t.ID, "task", t.Name, "shard", t.ShardKey, "retry_in", rt.cfg.UnknownTaskDelay, "error", msg)
	}
	fin.Due = toMillis(due)
	if to == StatePending && rt.giveBackFirst(t, fin) {
		return
	}
	rt.record(fin)
}

// giveBackFirst writes the give-back fin of t's first attempt, if t's flow
// group has a retry budget, together with taking the attempt back out of
// the budget's count (Store.GiveBackFirst), and reports whether it did:
// given back with its attempt undone, the call is counted again when it
// is next claimed, and must not be counted twice. If that write fails,
// the give-back is written as any other (record) and the budget keeps the
// count: one first attempt too many, that window.
func (rt *Runtime) giveBackFirst(t *Task, fin finishing) bool {
	h := rt.handler(t.Name)
	if h == nil || h.Flow == nil || h.Flow.RetryBudget == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), rt.cfg.LeaseDuration)
	defer cancel()
	// The claim wrote its time as the row's gmt_modified (t, as claimed).
	err := rt.store.GiveBackFirst(ctx, fin, h.Flow.group(t.Name), t.GmtModified, toMillis(rt.now()))
	switch {
	case err == nil:
		rt.health.ok(rt)
		return true
	case errors.Is(err, ErrLeaseLost):
		rt.refusedTransition(fin, "argo: give-back not recorded: the lease was lost (the task was rescued or changed meanwhile)")
		return true
	}
	rt.log.Warn("argo: give-back of a first attempt with its retry-budget count failed; giving it back without", "task_id", t.ID, "task", t.Name, "error", err)
	return false
}

// record writes a fenced finish. If the database is unreachable it keeps
// trying in the background (the attempt did run; its outcome must land) until
// the write lands, the lease is found lost, or the runtime is stopped. It
// reports whether the write landed now.
func (rt *Runtime) record(f finishing) bool {
	var err error
	if f.Direct {
		err = rt.store.Finish(context.Background(), f, toMillis(rt.now()))
	} else {
		err = rt.completer.Finish(f)
	}
	if err == nil {
		rt.health.ok(rt)
		return true
	}
	if errors.Is(err, storage.ErrDataRefused) {
		return false // the store logged why at ERROR; the lease expires and the task is rescued
	}
	if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrTransitionInvalid) {
		rt.refusedTransition(f, "argo: outcome not recorded: the lease was lost (the task was rescued or changed meanwhile)")
		return false
	}
	if !rt.store.OutcomeKnown(err) { // the write may have landed: find out (record_resolve.go)
		if landed, known := rt.settleFinish(f); known {
			if !landed {
				rt.refusedTransition(f, "argo: outcome not recorded: the lease was lost (the task was rescued or changed meanwhile)")
			}
			return landed
		}
	}
	rt.health.failed(rt, "record", err)
	first := f
	// Written later, the retry is not held: it is claimed when due.
	f.HoldUntil = 0
	// Keep renewing the lease until the outcome lands, so that the rescuer
	// does not take back (and re-run) an attempt that did run.
	// (The attempt's run holds the lease still: it keeps its deadline.)
	rt.leases.add(leaseKey{ID: f.ID, Shard: f.Shard, Attempt: f.Attempt}, time.Time{})
	rt.loops.Add(1)
	go func() {
		defer rt.loops.Done()
		defer rt.leases.remove(leaseKey{ID: f.ID, Shard: f.Shard, Attempt: f.Attempt})
		wait := 100 * time.Millisecond
		deadline := time.Now().Add(rt.cfg.ShutdownTimeout)
		for {
			select {
			case <-time.After(wait):
			case <-rt.ctx.Done():
				if time.Now().After(deadline) {
					rt.log.Error("argo: outcome not recorded before shutdown; the lease will expire and the task be rescued", "task_id", f.ID, "attempt", f.Attempt)
					return
				}
				time.Sleep(wait)
			}
			err := rt.store.Finish(context.Background(), f, toMillis(rt.now()))
			if err == nil {
				rt.health.ok(rt)
				return
			}
			if errors.Is(err, storage.ErrDataRefused) {
				return // the store logged why at ERROR; the lease expires and the task is rescued
			}
			if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrTransitionInvalid) {
				if landed, lerr := rt.store.FinishLanded(context.Background(), first); lerr == nil && landed {
					rt.health.ok(rt) // an earlier write, whose answer was lost, had landed
					return
				}
				rt.refusedTransition(f, "argo: outcome not recorded: the lease was lost meanwhile")
				return
			}
			if wait < 5*time.Second {
				wait *= 2
			}
		}
	}()
	return false
}

// callSafely runs fn, turning a panic into a *PanicError with the stack.
func callSafely(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	return fn()
}

// checkAlert evaluates the task's alert after a failed attempt.
func (rt *Runtime) checkAlert(h *TaskDef, t *Task, pol RetryPolicy, msg string, permanent, willRetry bool) {
	if h == nil || h.Alert == "" {
		return
	}
	env := AlertEnv{
		ExecuteTimes: countedAttempt(t), MaxAttempts: pol.MaxAttempts, TaskName: t.Name, TaskID: t.ID,
		LastError: msg, Permanent: permanent, WillRetry: willRetry, Exhausted: !willRetry,
		ShardKey: t.ShardKey, AgeSeconds: rt.now().Sub(t.GmtCreate.Time()).Seconds(),
	}
	if rt.alerts.checkTraced(h, env, func(ctx context.Context) (context.Context, func(error)) {
		ctx, span := rt.startTaskSpan(ctx, t, "alert")
		return ctx, func(err error) {
			endTaskSpan(span, outcomeOf(err), err)
		}
	}) {
		rt.observe(func(o Observer) { o.AlertFired(t.Name) })
	}
}

// errString is err's text, or "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
