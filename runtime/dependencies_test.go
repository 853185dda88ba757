package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDependenciesSeedAcceptance is seed 002's acceptance list end to end:
// A fails for good → B (after A) and C (after A and B) end skipped, their
// error naming A, their handlers never called; D (independent) runs. The
// Inspector shows C's upstream tasks and why it was skipped.
func TestDependenciesSeedAcceptance(t *testing.T) {
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		rt := startRuntime(t, testConfig(dsn))
		var mu sync.Mutex
		ran := map[string]int{}
		def := func(name string, fail bool) *TaskDef {
			return &TaskDef{Name: name, Policy: fastPolicy(1), Run: func(context.Context, []byte) error {
				mu.Lock()
				ran[name]++
				mu.Unlock()
				if fail {
					return errors.New("A broke")
				}
				return nil
			}}
		}
		a, b, c, d := def("dep.A", true), def("dep.B", false), def("dep.C", false), def("dep.D", false)
		if err := rt.Register(a, b, c, d); err != nil {
			t.Fatal(err)
		}
		ids, err := rt.SubmitGroup(ctx, []GroupCall{
			{Call: Call{Task: a, Args: []byte(`{}`)}},
			{Call: Call{Task: b, Args: []byte(`{}`)}, AfterCalls: []int{0}},
			{Call: Call{Task: c, Args: []byte(`{}`)}, AfterCalls: []int{0, 1}},
			{Call: Call{Task: d, Args: []byte(`{}`)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, rt, ids[0], StateDead, 15*time.Second)
		waitState(t, rt, ids[3], StateSucceeded, 15*time.Second)
		want := fmt.Sprintf("upstream task %d failed", ids[0])
		for _, id := range ids[1:3] {
			task := waitState(t, rt, id, StateSkipped, 15*time.Second)
			if !strings.HasPrefix(task.ErrorMsg, want) {
				t.Fatalf("task %d skipped with %q, want %q…", id, task.ErrorMsg, want)
			}
		}
		mu.Lock()
		if ran["dep.B"] != 0 || ran["dep.C"] != 0 || ran["dep.D"] != 1 {
			t.Fatalf("handler calls %v: want B and C never, D once", ran)
		}
		mu.Unlock()
		deps, err := rt.Inspector().Dependencies(ctx, ids[2])
		if err != nil {
			t.Fatal(err)
		}
		if len(deps.Upstream) != 2 || deps.Upstream[0].TaskID != min(ids[0], ids[1]) || !strings.HasPrefix(deps.Why, want) {
			t.Fatalf("C's dependencies %+v", deps)
		}
		deps, err = rt.Inspector().Dependencies(ctx, ids[0])
		if err != nil || len(deps.Downstream) != 2 {
			t.Fatalf("A's dependencies %+v, %v: want B and C downstream", deps, err)
		}

		// An upstream task that is dead is refused at submit.
		_, err = rt.Submit(ctx, Call{Task: d, Args: []byte(`{}`), After: []int64{ids[0]}})
		if !errors.Is(err, ErrDependency) || !errors.Is(err, ErrNotPersisted) {
			t.Fatalf("submit after a dead task: %v, want ErrDependency and ErrNotPersisted", err)
		}
		// A cycle is refused, nothing written.
		_, err = rt.SubmitGroup(ctx, []GroupCall{{Call: Call{Task: d, Args: []byte(`{}`)}, AfterCalls: []int{1}}, {Call: Call{Task: d, Args: []byte(`{}`)}, AfterCalls: []int{0}}})
		if !errors.Is(err, ErrDependency) || !strings.Contains(err.Error(), "cycle") {
			t.Fatalf("cycle: %v", err)
		}
		if n, err := rt.Inspector().Count(ctx, Filter{}); err != nil || n != 4 {
			t.Fatalf("%d tasks after the refused submits (%v), want 4", n, err)
		}
	})
}

// TestDependencyChainAcrossInstances: a chain submitted on one instance runs
// in order on two, each task starting only after the previous one
// succeeded; a task submitted with Call.After on the second instance waits
// for a task of the first, whose handler is blocked meanwhile.
func TestDependencyChainAcrossInstances(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		cfg1, cfg2 := testConfig(dsn), testConfig(dsn)
		cfg1.InstanceID, cfg2.InstanceID = "dep-one", "dep-two"
		rt1 := startRuntime(t, cfg1)
		rt2 := startRuntime(t, cfg2)
		const n = 60
		var mu sync.Mutex
		var order []int
		running := 0
		step := func(instance string) *TaskDef {
			return &TaskDef{Name: "dep.step", Policy: fastPolicy(3), Run: func(_ context.Context, args []byte) error {
				var i int
				if _, err := fmt.Sscanf(string(args), `{"i":%d}`, &i); err != nil {
					return err
				}
				mu.Lock()
				running++
				overlap := running > 1
				order = append(order, i)
				mu.Unlock()
				time.Sleep(time.Millisecond) // a little work, so an overlap would show
				mu.Lock()
				running--
				mu.Unlock()
				if overlap {
					return fmt.Errorf("step %d started while another ran", i)
				}
				return nil
			}}
		}
		if err := rt1.Register(step("one")); err != nil {
			t.Fatal(err)
		}
		if err := rt2.Register(step("two")); err != nil {
			t.Fatal(err)
		}
		calls := make([]GroupCall, n)
		for i := range calls {
			calls[i] = GroupCall{Call: Call{Task: step(""), Args: []byte(fmt.Sprintf(`{"i":%d}`, i))}}
			if i > 0 {
				calls[i].AfterCalls = []int{i - 1}
			}
		}
		start := time.Now()
		ids, err := rt1.SubmitGroup(ctx, calls)
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, rt1, ids[n-1], StateSucceeded, 60*time.Second)
		t.Logf("chain of %d on two instances: %v", n, time.Since(start))
		mu.Lock()
		defer mu.Unlock()
		if len(order) != n {
			t.Fatalf("%d starts, want %d (one per task): %v", len(order), n, order)
		}
		for i, got := range order {
			if got != i {
				t.Fatalf("start %d was step %d: order %v", i, got, order)
			}
		}
		for _, id := range ids {
			if task, err := rt2.Inspector().Get(ctx, id); err != nil || task.State != StateSucceeded || task.ExecuteTimes != 1 {
				t.Fatalf("task %d: %+v, %v; want succeeded at its first attempt", id, task, err)
			}
		}
	})
}

// TestDependencyOnTaskOfAnotherInstance: a call submitted on one instance
// with Call.After waits (blocked) while its upstream task, on the other
// instance, runs; it runs once that task succeeded.
func TestDependencyOnTaskOfAnotherInstance(t *testing.T) {
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		cfg1, cfg2 := testConfig(dsn), testConfig(dsn)
		cfg1.InstanceID, cfg2.InstanceID = "dep-up", "dep-down"
		rt1 := startRuntime(t, cfg1)
		rt2 := startRuntime(t, cfg2)
		release := make(chan struct{})
		upStarted := make(chan struct{}, 1)
		up := &TaskDef{Name: "dep.up", Policy: fastPolicy(1), Run: func(ctx context.Context, _ []byte) error {
			upStarted <- struct{}{}
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
		downRan := make(chan struct{}, 1)
		down := &TaskDef{Name: "dep.down", Policy: fastPolicy(1), Run: func(context.Context, []byte) error {
			downRan <- struct{}{}
			return nil
		}}
		if err := rt1.Register(up); err != nil {
			t.Fatal(err)
		}
		if err := rt2.Register(down); err != nil {
			t.Fatal(err)
		}
		upID, err := rt1.Submit(ctx, Call{Task: up, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		receive(t, upStarted, 15*time.Second, "the upstream task to start")
		downID, err := rt2.Submit(ctx, Call{Task: down, Args: []byte(`{}`), After: []int64{upID}})
		if err != nil {
			t.Fatal(err)
		}
		deps, err := rt2.Inspector().Dependencies(ctx, downID)
		if err != nil || !strings.Contains(deps.Why, fmt.Sprintf("waits for upstream task %d (running)", upID)) {
			t.Fatalf("dependencies of the waiting task: %+v, %v", deps, err)
		}
		select {
		case <-downRan:
			t.Fatal("the downstream task ran while its upstream task was running")
		default:
		}
		close(release)
		receive(t, downRan, 15*time.Second, "the downstream task to run after its upstream task succeeded")
		waitState(t, rt2, downID, StateSucceeded, 15*time.Second)
	})
}
