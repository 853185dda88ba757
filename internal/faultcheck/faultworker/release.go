package main

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/argo-retry/argo/internal/faultcheck"
	"github.com/argo-retry/argo/internal/maintenance"
	"github.com/argo-retry/argo/internal/storage"
)

// sweepWatcher is the runtime's log handler: it passes every record on, and
// writes a faultcheck.KindSwept record when the blocked sweeper reports
// tasks it settled (faultcheck.InvReleaseLost).
type sweepWatcher struct {
	slog.Handler
	h *faultcheck.Writer
}

func (s sweepWatcher) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == maintenance.LostReleaseMessage {
		var n int64
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "tasks" {
				n = a.Value.Int64()
			}
			return true
		})
		s.h.Write(faultcheck.Record{Kind: faultcheck.KindSwept, Ev: "settled", ID: n})
	}
	return s.Handler.Handle(ctx, r)
}

func (s sweepWatcher) WithAttrs(as []slog.Attr) slog.Handler {
	return sweepWatcher{s.Handler.WithAttrs(as), s.h}
}

func (s sweepWatcher) WithGroup(name string) slog.Handler {
	return sweepWatcher{s.Handler.WithGroup(name), s.h}
}

// deadlockErr is the server's deadlock error, as InnoDB returns it for a
// transaction it rolled back.
var deadlockErr = &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock; try restarting transaction (injected by the fault checker)"}

// injectDeadlock returns ctx carrying a storage.TxHook that rolls back the
// first write transaction run with it at its COMMIT as a deadlock (after
// its reads), and holds its second try until every task of after has
// ended, or faultcheck.DeadlockWait (faultcheck.FeatureDeadlock).
func (w *worker) injectDeadlock(ctx context.Context, op string, after []int64) context.Context {
	if !strings.HasPrefix(w.c.dsn, "mysql:") {
		return ctx // SQLite never retries a write transaction
	}
	var injected, retried atomic.Bool
	return storage.WithTxHook(ctx, func(hctx context.Context, _ int, at storage.TxPoint) error {
		switch {
		case at == storage.TryCommit && injected.CompareAndSwap(false, true):
			w.h.Write(faultcheck.Record{Kind: faultcheck.KindDeadlock, Ev: "injected", Op: op})
			return deadlockErr
		case at == storage.TryBegin && injected.Load() && retried.CompareAndSwap(false, true):
			out := faultcheck.DeadlockUpstreamRunning
			if w.ended(hctx, after) {
				out = faultcheck.DeadlockUpstreamEnded
			}
			w.h.Write(faultcheck.Record{Kind: faultcheck.KindDeadlock, Ev: "retry", Op: op, Out: out})
		}
		return nil
	})
}

// ended waits until every task of ids is in a terminal state, for at most
// faultcheck.DeadlockWait, and reports whether they all were.
func (w *worker) ended(ctx context.Context, ids []int64) bool {
	deadline := time.Now().Add(faultcheck.DeadlockWait)
	in := w.rt.Inspector()
	for {
		all := true
		for _, id := range ids {
			t, err := in.Get(ctx, id)
			if err != nil || t == nil || !t.State.Terminal() {
				all = false
				break
			}
		}
		if all {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
}
