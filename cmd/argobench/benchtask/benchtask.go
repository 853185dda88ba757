// Package benchtask holds the durable functions argobench measures. Its
// argo_gen.go is written by argogen (go generate) like any user package's.
//
// The functions do no work of their own: they report to the hooks the bench
// sets before a workload (executions per task, attempt start times), so that
// the figures are the cost of the runtime and the database.
package benchtask

//go:generate go run github.com/argo-retry/argo/cmd/argogen

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/argo-retry/argo/runtime"
)

// Hooks are what the functions call; a nil hook does nothing.
type Hooks struct {
	// Sync is called by SyncCall.
	Sync func(ctx context.Context, n int)
	// Work is called by Work.
	Work func(ctx context.Context, n int)
	// FailOnce is called by FailOnce; the error it returns ends the attempt.
	FailOnce func(ctx context.Context, n int) error
	// Scheduled is called by Scheduled.
	Scheduled func(ctx context.Context, n int)
}

var hooks atomic.Pointer[Hooks]

// SetHooks replaces the hooks (safe while attempts run).
func SetHooks(h Hooks) { hooks.Store(&h) }

func current() *Hooks {
	if h := hooks.Load(); h != nil {
		return h
	}
	return &Hooks{}
}

// SyncCall runs its first attempt in the caller's goroutine and succeeds.
//
//argo:retry name=argobench.SyncCall thread=sync
func SyncCall(ctx context.Context, n int) error {
	if f := current().Sync; f != nil {
		f(ctx, n)
	}
	return nil
}

// Later is scheduled an hour ahead: submitting it measures the insert alone.
//
//argo:retry name=argobench.Later mode=schedule first-delay=1h
func Later(ctx context.Context, n int) error { return nil }

// Work runs on the worker pool and succeeds.
//
//argo:retry name=argobench.Work
func Work(ctx context.Context, n int) error {
	if f := current().Work; f != nil {
		f(ctx, n)
	}
	return nil
}

// Capped is Work under a concurrency cap far above the workers (limit=):
// its cost against Work is the gated claim's.
//
//argo:retry name=argobench.Capped limit=argobench.capped:100000
func Capped(ctx context.Context, n int) error {
	if f := current().Work; f != nil {
		f(ctx, n)
	}
	return nil
}

// Rated is Work under a rate limit (rate=), 500 starts a second across
// the cluster, bucket of 50.
//
//argo:retry name=argobench.Rated rate=argobench.rated:500/s burst=50
func Rated(ctx context.Context, n int) error {
	if f := current().Work; f != nil {
		f(ctx, n)
	}
	return nil
}

// FailOnce reports to its hook, which decides the outcome; it is retried
// once, exactly 1s after a failure.
//
//argo:retry name=argobench.FailOnce retries=1 backoff=fixed delay=1s jitter=none
func FailOnce(ctx context.Context, n int) error {
	if f := current().FailOnce; f != nil {
		return f(ctx, n)
	}
	return errors.New("argobench: FailOnce has no hook")
}

// Scheduled runs 2s after its submit (longer than the default 1s poll):
// how late it starts measures how scheduled calls are started.
//
//argo:retry name=argobench.Scheduled mode=schedule first-delay=2s
func Scheduled(ctx context.Context, n int) error {
	if f := current().Scheduled; f != nil {
		f(ctx, n)
	}
	return nil
}

// Defs returns the generated task definitions, for the hand-written side of
// the benchmark (which stores the same column values).
func Defs() (syncCall, later, work, failOnce *runtime.TaskDef) {
	return argoTaskSyncCall, argoTaskLater, argoTaskWork, argoTaskFailOnce
}
