package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/runtime"
)

// TestDurableAfter: through the generated StageDurableAfter, B (after A)
// stays blocked while A runs and starts only once A has ended; C, after a
// stage that fails for good, ends skipped naming it; with no ids the
// wrapper is an ordinary call that returns its task id. On both databases.
func TestDurableAfter(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			rt := startOn(t, b.DSN)
			in := rt.Inspector()
			ctx := context.Background()
			stages.mu.Lock()
			stages.log, stages.gates, stages.open, stages.all = nil, map[string]chan struct{}{}, map[string]bool{}, false
			stages.mu.Unlock()
			t.Cleanup(openAllGates) // before the runtime's Stop: no stage left waiting
			state := func(id int64) runtime.State {
				task, err := in.Get(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return task.State
			}

			a, err := StageDurableAfter(ctx, nil, "a")
			if err != nil {
				t.Fatal(err)
			}
			bID, err := StageDurableAfter(ctx, []int64{a}, "b")
			if err != nil {
				t.Fatal(err)
			}
			waitUntil(t, "stage a to start", func() bool { return slices.Contains(stageLog(), "start a") })
			if s := state(bID); s != runtime.StateBlocked {
				t.Fatalf("b while a runs: %s, want blocked", s)
			}
			openGate("b") // b may finish as soon as it starts
			openGate("a")
			waitUntil(t, "b to succeed", func() bool { return state(bID) == runtime.StateSucceeded })
			log := stageLog()
			if i, j := slices.Index(log, "end a"), slices.Index(log, "start b"); i < 0 || j < i {
				t.Fatalf("stage log %q: b started before a ended", log)
			}

			broken, err := StageDurableAfter(ctx, nil, "broken")
			if err != nil {
				t.Fatal(err)
			}
			c, err := StageDurableAfter(ctx, []int64{broken}, "c")
			if err != nil {
				t.Fatal(err)
			}
			openGate("broken")
			waitUntil(t, "c to be skipped", func() bool { return state(c) == runtime.StateSkipped })
			task, err := in.Get(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(task.ErrorMsg, "upstream task") {
				t.Errorf("c's error %q does not name its upstream task", task.ErrorMsg)
			}
			if slices.Contains(stageLog(), "start c") {
				t.Error("c ran although its upstream task failed")
			}
		})
	}
}

func stageLog() []string {
	stages.mu.Lock()
	defer stages.mu.Unlock()
	return slices.Clone(stages.log)
}
