package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/alertexpr"
)

// AlertEnv is what an alert expression sees (argotype.AlertEnv). Field names
// are the expression's names: executeTimes >= 3, lastError contains "timeout", ….
type AlertEnv = argotype.AlertEnv

// AlertEvent is passed to an alert action (argotype.AlertEvent).
type AlertEvent = argotype.AlertEvent

// CompileAlert compiles an alert expression against AlertEnv; it must be
// boolean. argogen compiles the same way at generate time, so a typo fails
// `go generate`.
func CompileAlert(expression string) (*vm.Program, error) { return alertexpr.Compile(expression) }

// alerter evaluates alert expressions and runs actions on a bounded pool,
// off the worker path: a slow, failing or panicking action never delays or
// breaks task processing.
type alerter struct {
	log     *slog.Logger
	timeout time.Duration
	queue   chan alertJob
	wg      sync.WaitGroup

	// qmu guards closed and every send on queue (read-locked by check).
	qmu    sync.RWMutex
	closed bool
	// quit is closed when Stop's context ends: queued actions are dropped,
	// running ones abandoned (actionCtx is canceled).
	quit         chan struct{}
	actionCtx    context.Context
	cancelAction context.CancelFunc
	dropped      atomic.Int64

	mu       sync.Mutex
	programs map[string]*vm.Program

	// channels are Config.AlertChannels, by name.
	channels map[string]AlertChannel
}

type alertJob struct {
	name   string
	action func(context.Context, AlertEvent) error
	ev     AlertEvent
	// span starts the action's span (nil: none); its func ends it.
	span func(context.Context) (context.Context, func(error))
	// label names the action or channel in logs.
	label string
}

func newAlerter(log *slog.Logger, workers, queue int, timeout time.Duration) *alerter {
	a := &alerter{log: log, timeout: timeout, queue: make(chan alertJob, queue), quit: make(chan struct{}), programs: map[string]*vm.Program{}}
	a.actionCtx, a.cancelAction = context.WithCancel(context.Background())
	for range workers {
		a.wg.Add(1)
		go a.loop()
	}
	return a
}

func (a *alerter) program(expression string) (*vm.Program, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p, ok := a.programs[expression]; ok {
		return p, nil
	}
	p, err := CompileAlert(expression)
	if err != nil {
		return nil, err
	}
	a.programs[expression] = p
	return p, nil
}

// check evaluates def's expression against env and queues its action.
// It never blocks: a full queue drops the alert with an error log.
func (a *alerter) check(def *TaskDef, env AlertEnv) bool { return a.checkTraced(def, env, nil) }

// checkTraced is check whose action, if queued, runs in the span span starts.
func (a *alerter) checkTraced(def *TaskDef, env AlertEnv, span func(context.Context) (context.Context, func(error))) bool {
	if def == nil || def.Alert == "" {
		return false
	}
	p, err := a.program(def.Alert)
	if err != nil {
		a.log.Error("argo: alert expression does not compile", "task", def.Name, "error", err)
		return false
	}
	out, err := expr.Run(p, env)
	if err != nil {
		a.log.Error("argo: alert expression failed", "task", def.Name, "task_id", env.TaskID, "error", err)
		return false
	}
	if hold, _ := out.(bool); !hold {
		return false
	}
	ev := AlertEvent{AlertEnv: env, Expression: def.Alert, At: time.Now()}
	a.log.Warn("argo: alert", "task", def.Name, "task_id", env.TaskID, "attempt", env.ExecuteTimes, "expression", def.Alert, "error", env.LastError)
	jobs := a.alertJobs(def, ev, span)
	if len(jobs) == 0 {
		return true
	}
	a.qmu.RLock()
	defer a.qmu.RUnlock()
	for _, job := range jobs {
		if a.closed {
			// An attempt that outlived Stop.
			a.log.Error("argo: runtime stopped, alert action not run", "task", def.Name, "task_id", env.TaskID, "action", job.label)
			continue
		}
		select {
		case a.queue <- job:
		default:
			a.log.Error("argo: alert queue full, alert action not run", "task", def.Name, "task_id", env.TaskID, "action", job.label)
		}
	}
	return true
}

func (a *alerter) loop() {
	defer a.wg.Done()
	for job := range a.queue {
		select {
		case <-a.quit:
			a.dropped.Add(1)
			continue
		default:
		}
		a.run(job)
	}
}

// run runs one action with a deadline. An action that ignores its context
// is abandoned at the deadline (its goroutine is left to finish) so the pool
// keeps moving.
func (a *alerter) run(job alertJob) {
	ctx, cancel := context.WithTimeout(a.actionCtx, a.timeout)
	defer cancel()
	var endSpan func(error)
	if job.span != nil {
		ctx, endSpan = job.span(ctx)
	}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("alert action panicked: %v", r)
			}
		}()
		done <- job.action(ctx, job.ev)
	}()
	select {
	case err := <-done:
		if endSpan != nil {
			endSpan(err)
		}
		if err != nil {
			a.log.Error("argo: alert action failed", "task", job.name, "task_id", job.ev.TaskID, "action", job.label, "error", err)
		}
	case <-ctx.Done():
		if endSpan != nil {
			endSpan(context.Cause(ctx))
		}
		if a.actionCtx.Err() != nil {
			a.log.Error("argo: alert action abandoned: the runtime stopped", "task", job.name, "task_id", job.ev.TaskID)
		} else {
			a.log.Error("argo: alert action timed out and was abandoned", "task", job.name, "task_id", job.ev.TaskID, "timeout", a.timeout)
		}
	}
}

// close runs the queued actions until ctx ends, then abandons the running
// ones (their context is canceled) and drops those still queued, with an
// error log saying how many. An alert checked after close is logged, its
// action not run.
func (a *alerter) close(ctx context.Context) {
	a.qmu.Lock()
	if a.closed {
		a.qmu.Unlock()
		return
	}
	a.closed = true
	close(a.queue)
	a.qmu.Unlock()
	defer a.cancelAction()
	done := make(chan struct{})
	go func() { a.wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	close(a.quit)
	a.cancelAction()
	<-done // no action is waited for any more: the workers only drain the queue
	if n := a.dropped.Load(); n > 0 {
		a.log.Error("argo: alert actions dropped: the runtime stopped before they ran", "dropped", n)
	}
}
