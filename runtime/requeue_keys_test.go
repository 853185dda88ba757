package runtime

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestRequeuedTaskHasFreshKeys: a task that dies after two attempts and is
// requeued runs two more attempts as a new task: the four idempotency keys
// are all different (a callee that drops duplicates does not drop the
// requeued work), TaskKey is the same within each task and differs between
// them, and the dead task stays dead with its own two attempts.
func TestRequeuedTaskHasFreshKeys(t *testing.T) {
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfig(dsn))
		var mu sync.Mutex
		var keys, taskKeys []string
		def := &TaskDef{Name: "always-fails", Policy: fastPolicy(2), Run: func(ctx context.Context, args []byte) error {
			mu.Lock()
			keys = append(keys, IdempotencyKey(ctx))
			taskKeys = append(taskKeys, TaskKey(ctx))
			mu.Unlock()
			return errors.New("callee down")
		}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, rt, id, StateDead, 20*time.Second)
		in := rt.Inspector()
		in.Operator = "ops"
		newID, err := in.RequeueAsNew(context.Background(), id, "callee fixed, still failing")
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, rt, newID, StateDead, 20*time.Second)

		mu.Lock()
		defer mu.Unlock()
		if len(keys) != 4 {
			t.Fatalf("%d attempts ran, want 4: keys %q", len(keys), keys)
		}
		sorted := slices.Clone(keys)
		slices.Sort(sorted)
		if len(slices.Compact(sorted)) != 4 {
			t.Fatalf("idempotency keys repeat across the requeue: %q", keys)
		}
		t.Logf("idempotency keys %q, task keys %q", keys, taskKeys)
		if taskKeys[0] != taskKeys[1] || taskKeys[2] != taskKeys[3] || taskKeys[0] == taskKeys[2] {
			t.Fatalf("task keys %q: want one per task, two tasks", taskKeys)
		}
		if old, err := in.Get(context.Background(), id); err != nil || old.State != StateDead || old.ExecuteTimes != 2 {
			t.Fatalf("the requeued task: %+v, %v; want it dead after its 2 attempts", old, err)
		}
		if atts, err := in.Attempts(context.Background(), id); err != nil || len(atts) != 3 { // 2 attempts, the no-fallback record
			t.Fatalf("the requeued task's history: %d rows, %v", len(atts), err)
		}
	})
}
