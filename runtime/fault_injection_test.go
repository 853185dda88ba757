package runtime

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestTransientFail (seed 001's run?transient_fail=true): with
// Config.FaultInjection, each transient-fail request fails one attempt as
// transient without calling the function, recorded in the trail and in the
// attempt history; the task then retries per its policy.
func TestTransientFail(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfigT(t, dsn)
		cfg.FaultInjection = true
		rt := startRuntime(t, cfg)
		ctx := context.Background()
		var calls atomic.Int32
		def := &TaskDef{Name: "seed001.Drill", Policy: fastPolicy(4), Run: func(context.Context, []byte) error {
			calls.Add(1)
			return nil
		}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		id, err := rt.Submit(ctx, Call{Task: def, RunAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		in := rt.Inspector()
		in.Operator = "alice"
		if err := in.TransientFail(ctx, id, ""); err == nil {
			t.Fatal("a transient-fail without a reason was accepted")
		}
		for range 2 {
			if err := in.TransientFail(ctx, id, "drill: downstream flaps"); err != nil {
				t.Fatal(err)
			}
		}
		if err := in.RunNow(ctx, id, ""); err != nil {
			t.Fatal(err)
		}
		task := waitState(t, rt, id, StateSucceeded, 20*time.Second)
		if task.ExecuteTimes != 3 || calls.Load() != 1 {
			t.Fatalf("two requests: %d attempts, %d calls of the function; want 3 attempts, 1 call", task.ExecuteTimes, calls.Load())
		}
		atts, err := in.Attempts(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var injected int
		for _, a := range atts {
			if a.Kind == AttemptKindAttempt && a.Outcome == OutcomeFailed && strings.Contains(a.Error, "transient failure injected by an operator's transient-fail") {
				injected++
			}
		}
		if injected != 2 {
			t.Fatalf("history %+v: %d injected failures, want 2", atts, injected)
		}
		tr, err := in.Trail(ctx, id)
		if err != nil || len(tr) != 3 || tr[0].Action != ActionTransientFail || tr[0].Operator != "alice" || tr[0].Reason != "drill: downstream flaps" {
			t.Fatalf("trail %+v, %v; want two transient_fail by alice, then run_now", tr, err)
		}
		if err := in.TransientFail(ctx, id, "too late"); err == nil || !strings.Contains(err.Error(), "succeeded") {
			t.Fatalf("transient-fail of a succeeded task: %v; want refused, naming the state", err)
		}
	})
}

// TestTransientFailOffByDefault: without Config.FaultInjection a request is
// recorded but no attempt is failed for it.
func TestTransientFailOffByDefault(t *testing.T) {
	rt := startRuntime(t, testConfigT(t, "sqlite:"+t.TempDir()+"/argo.db"))
	ctx := context.Background()
	var calls atomic.Int32
	def := &TaskDef{Name: "seed001.Off", Policy: fastPolicy(4), Run: func(context.Context, []byte) error {
		calls.Add(1)
		return nil
	}}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	id, err := rt.Submit(ctx, Call{Task: def, RunAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Inspector().TransientFail(ctx, id, "drill"); err != nil {
		t.Fatal(err)
	}
	if err := rt.Inspector().RunNow(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	task := waitState(t, rt, id, StateSucceeded, 20*time.Second)
	if task.ExecuteTimes != 1 || calls.Load() != 1 {
		t.Fatalf("fault injection off: %d attempts, %d calls; want 1, 1", task.ExecuteTimes, calls.Load())
	}
}
