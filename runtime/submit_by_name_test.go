package runtime

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestSubmitByNameUsesRegisteredDef (seed 004, submitTask(taskType,
// payload)): a Call whose TaskDef is only a Name stores and runs the
// definition registered under that name: its policy (one attempt here, not
// argo's default four), its mode and delay, its fallback.
func TestSubmitByNameUsesRegisteredDef(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfigT(t, dsn))
		var runs, fallbacks atomic.Int32
		def := &TaskDef{
			Name:   "seed004.Once",
			Policy: fastPolicy(1),
			Run: func(ctx context.Context, args []byte) error {
				runs.Add(1)
				return errors.New("downstream refused")
			},
			Fallback: func(ctx context.Context, args []byte, lastErr error) error {
				fallbacks.Add(1)
				return errors.New("fallback refused too")
			},
			FallbackName: "seed004.OnceFallback",
		}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		id, err := rt.Submit(context.Background(), Call{Task: &TaskDef{Name: "seed004.Once"}, Args: []byte(`{}`)})
		if err != nil {
			t.Fatalf("Submit by name: %v", err)
		}
		task := waitState(t, rt, id, StateDead, 20*time.Second)
		if task.MaxAttempts != 1 || task.ExecuteTimes != 1 || runs.Load() != 1 || fallbacks.Load() != 1 {
			t.Fatalf("submitted by name: max_attempts %d, execute_times %d, %d runs, %d fallback runs; want the registered policy's 1, 1, 1, 1",
				task.MaxAttempts, task.ExecuteTimes, runs.Load(), fallbacks.Load())
		}
		if task.RetryPolicyJSON != encodePolicy(def.Policy) || task.FallbackClassName != def.FallbackName {
			t.Fatalf("stored policy %s, fallback %q; want the registered %s, %q", task.RetryPolicyJSON, task.FallbackClassName, encodePolicy(def.Policy), def.FallbackName)
		}

		// Every submit path resolves the name the same way.
		sched := &TaskDef{Name: "seed004.Later", Mode: Scheduled, Delay: time.Hour, Policy: fastPolicy(2),
			Run: func(context.Context, []byte) error { return nil }}
		if err := rt.Register(sched); err != nil {
			t.Fatal(err)
		}
		ids, err := rt.SubmitGroup(context.Background(), []GroupCall{{Call: Call{Task: &TaskDef{Name: "seed004.Later"}}}})
		if err != nil {
			t.Fatalf("SubmitGroup by name: %v", err)
		}
		got, err := rt.Inspector().Get(context.Background(), ids[0])
		if err != nil {
			t.Fatal(err)
		}
		if got.MaxAttempts != 2 || got.PerformanceWay != Scheduled || got.DelayTime != 3600 {
			t.Fatalf("SubmitGroup by name stored max_attempts %d, mode %d, delay %d s; want the registered 2, Scheduled, 3600", got.MaxAttempts, got.PerformanceWay, got.DelayTime)
		}
	})
}

// TestSubmitByNameUnregisteredRefused: a TaskDef that is only a Name, for a
// name this runtime has not registered, is refused before anything is
// written, with an error that says what to do; a TaskDef with a Policy is
// a full definition and is stored as given, registered or not.
func TestSubmitByNameUnregisteredRefused(t *testing.T) {
	rt := startRuntime(t, testConfigT(t, "sqlite:"+t.TempDir()+"/argo.db"))
	ctx := context.Background()
	_, err := rt.Submit(ctx, Call{Task: &TaskDef{Name: "seed004.Nobody"}})
	if !errors.Is(err, ErrNotPersisted) || !errors.Is(err, ErrUnregisteredTask) || !strings.Contains(err.Error(), "Register") {
		t.Fatalf("Submit of an unregistered bare TaskDef: %v; want ErrNotPersisted and ErrUnregisteredTask, saying to Register it or give a Policy", err)
	}
	tx, err := rt.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = rt.SubmitTx(ctx, tx, Call{Task: &TaskDef{Name: "seed004.Nobody"}})
	tx.Rollback() // SQLite: the open transaction holds the write lock
	if !errors.Is(err, ErrUnregisteredTask) {
		t.Fatalf("SubmitTx of an unregistered bare TaskDef: %v; want ErrUnregisteredTask", err)
	}
	if _, err := rt.SubmitGroup(ctx, []GroupCall{{Call: Call{Task: &TaskDef{Name: "seed004.Nobody"}}}}); !errors.Is(err, ErrUnregisteredTask) {
		t.Fatalf("SubmitGroup of an unregistered bare TaskDef: %v; want ErrUnregisteredTask", err)
	}
	n, err := rt.Inspector().Count(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d rows written by refused submits", n)
	}
	id, err := rt.Submit(ctx, Call{Task: &TaskDef{Name: "seed004.Producer", Policy: fastPolicy(7)}, RunAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatalf("Submit of a full definition from a producer: %v", err)
	}
	got, err := rt.Inspector().Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.MaxAttempts != 7 {
		t.Fatalf("stored max_attempts %d, want the given 7", got.MaxAttempts)
	}
}

// TestSubmitDefaultPolicyAgainstRegisteredRefused: a second TaskDef for a
// registered name that gives no Policy (argo's default, four attempts)
// while the registered one has another is refused, not stored with the
// default; one whose policy matches is stored.
func TestSubmitDefaultPolicyAgainstRegisteredRefused(t *testing.T) {
	rt := startRuntime(t, testConfigT(t, "sqlite:"+t.TempDir()+"/argo.db"))
	ctx := context.Background()
	run := func(context.Context, []byte) error { return nil }
	if err := rt.Register(&TaskDef{Name: "seed004.Registered", Policy: fastPolicy(1), Run: run}); err != nil {
		t.Fatal(err)
	}
	_, err := rt.Submit(ctx, Call{Task: &TaskDef{Name: "seed004.Registered", Run: run}, RunAt: time.Now().Add(time.Hour)})
	if !errors.Is(err, ErrNotPersisted) || !strings.Contains(err.Error(), "no Policy") {
		t.Fatalf("Submit with no Policy against a registered 1-attempt definition: %v; want ErrNotPersisted naming the missing Policy", err)
	}
	id, err := rt.Submit(ctx, Call{Task: &TaskDef{Name: "seed004.Registered", Policy: fastPolicy(1), Run: run}, RunAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatalf("Submit of a copy with the same policy: %v", err)
	}
	if got, err := rt.Inspector().Get(ctx, id); err != nil || got.MaxAttempts != 1 {
		t.Fatalf("copy stored %+v, %v; want max_attempts 1", got, err)
	}
}
