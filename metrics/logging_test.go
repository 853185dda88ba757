package metrics_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/internal/testwait"
	"github.com/argo-retry/argo/runtime"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// recorder is a slog.Handler that keeps every record.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.records = append(r.records, rec.Clone())
	r.mu.Unlock()
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r } // the runtime adds none
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func (r *recorder) snapshot() []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]slog.Record(nil), r.records...)
}

func attrs(rec slog.Record) map[string]slog.Value {
	out := map[string]slog.Value{}
	rec.Attrs(func(a slog.Attr) bool { out[a.Key] = a.Value; return true })
	return out
}

// forTask returns the records at level about task id.
func forTask(recs []slog.Record, level slog.Level, id int64) []slog.Record {
	var out []slog.Record
	for _, r := range recs {
		if v, ok := attrs(r)["task_id"]; ok && r.Level == level && v.Int64() == id {
			out = append(out, r)
		}
	}
	return out
}

// TestStructuredLogs: a retry logs one warning and a dead task one error,
// with the task's id, name, attempt, shard and error as attributes; an idle
// runtime logs nothing per poll.
func TestStructuredLogs(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			rec := &recorder{}
			cfg := testConfig(b.DSN)
			cfg.Logger = slog.New(rec)
			rt, err := runtime.Start(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Stop(ctx)

			var calls atomic.Int32
			once := &runtime.TaskDef{Name: "fails.once", Policy: fast(3), Run: func(context.Context, []byte) error {
				if calls.Add(1) == 1 {
					return errors.New("scheduler busy")
				}
				return nil
			}}
			dies := &runtime.TaskDef{Name: "always.fails", Policy: fast(1), Run: func(context.Context, []byte) error {
				return errors.New("label printer on fire")
			}}
			rt.Register(once, dies)
			retryID, err := rt.Submit(ctx, runtime.Call{Task: once, Args: []byte(`{}`), ShardBy: "order-7"})
			if err != nil {
				t.Fatal(err)
			}
			deadID, err := rt.Submit(ctx, runtime.Call{Task: dies, Args: []byte(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			waitFinal(t, rt.Inspector(), retryID, deadID)
			retryTask, _ := rt.Inspector().Get(ctx, retryID)
			deadTask, _ := rt.Inspector().Get(ctx, deadID)

			// Logs are written around the state change: wait a moment for them.
			testwait.For(t, 5*time.Second, "the dead task's error record", func() bool {
				return len(forTask(rec.snapshot(), slog.LevelError, deadID)) > 0
			})
			recs := rec.snapshot()

			warns := forTask(recs, slog.LevelWarn, retryID)
			if len(warns) != 1 {
				t.Fatalf("retry logged %d warnings, want 1: %v", len(warns), warns)
			}
			a := attrs(warns[0])
			if a["task"].String() != "fails.once" || a["attempt"].Int64() != 1 || a["shard"].Int64() != int64(retryTask.ShardKey) || a["error"].String() != "scheduler busy" {
				t.Fatalf("retry warning attributes = %v", a)
			}
			if len(forTask(recs, slog.LevelError, retryID)) != 0 {
				t.Fatal("a task that recovered by retry logged an error")
			}

			errs := forTask(recs, slog.LevelError, deadID)
			if len(errs) != 1 {
				t.Fatalf("dead task logged %d errors, want 1: %v", len(errs), errs)
			}
			a = attrs(errs[0])
			if a["task"].String() != "always.fails" || a["shard"].Int64() != int64(deadTask.ShardKey) || a["error"].String() != "label printer on fire" {
				t.Fatalf("dead error attributes = %v", a)
			}
			if _, ok := a["attempt"]; !ok {
				if _, ok := a["attempts"]; !ok {
					t.Fatalf("dead error has no attempt count: %v", a)
				}
			}

			// Idle: about 15 polls and a heartbeat or two, no records.
			before := len(rec.snapshot())
			time.Sleep(300 * time.Millisecond)
			if after := rec.snapshot(); len(after) != before {
				t.Fatalf("an idle runtime logged: %v", after[before:])
			}
		})
	}
}
