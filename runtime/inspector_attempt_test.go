package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestInspectorAttempt (seed 000's findByWorkflowIdAndAttempt(id, 2)): one
// attempt of a task by its number, with its outcome and error; a number
// the task has not reached, and a task that does not exist, are told apart.
func TestInspectorAttempt(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfigT(t, dsn))
		ctx := context.Background()
		def := &TaskDef{Name: "seed000.ThirdTime", Policy: fastPolicy(5), Run: func(ctx context.Context, args []byte) error {
			_, n, _ := AttemptFrom(ctx)
			if n < 3 {
				return fmt.Errorf("downstream down (attempt %d)", n)
			}
			return nil
		}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		id, err := rt.Submit(ctx, Call{Task: def, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, rt, id, StateSucceeded, 20*time.Second)
		in := rt.Inspector()
		for n, want := range map[int]string{1: OutcomeFailed, 2: OutcomeFailed, 3: OutcomeSucceeded} {
			a, err := in.Attempt(ctx, id, n)
			if err != nil {
				t.Fatalf("Attempt(%d): %v", n, err)
			}
			if a.Attempt != n || a.Kind != AttemptKindAttempt || a.Outcome != want || a.TaskPK != id || a.StartedAt == 0 || a.FinishedAt < a.StartedAt {
				t.Fatalf("Attempt(%d) = %+v, want attempt %d of task %d, outcome %s", n, a, n, id, want)
			}
			if n < 3 && !strings.Contains(a.Error, fmt.Sprintf("(attempt %d)", n)) {
				t.Fatalf("Attempt(%d) error %q is not that attempt's", n, a.Error)
			}
		}
		if _, err := in.Attempt(ctx, id, 4); !errors.Is(err, ErrNoAttempt) || !strings.Contains(err.Error(), "has no attempt 4") {
			t.Fatalf("Attempt(4) of a task that ran 3: %v; want ErrNoAttempt", err)
		}
		if _, err := in.Attempt(ctx, id, 0); !errors.Is(err, ErrNoAttempt) {
			t.Fatalf("Attempt(0): %v; want ErrNoAttempt (attempts count from 1)", err)
		}
		if _, err := in.Attempt(ctx, id+1_000_000, 1); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Attempt of a task that does not exist: %v; want ErrNotFound", err)
		}
	})
}

// TestInspectorAttemptRunning: the attempt running now is returned with an
// empty outcome, its worker and its start.
func TestInspectorAttemptRunning(t *testing.T) {
	rt := startRuntime(t, testConfigT(t, "sqlite:"+t.TempDir()+"/argo.db"))
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	def := &TaskDef{Name: "seed000.Slow", Policy: fastPolicy(1), Run: func(ctx context.Context, args []byte) error {
		close(started)
		<-release
		return nil
	}}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	id, err := rt.Submit(ctx, Call{Task: def})
	if err != nil {
		t.Fatal(err)
	}
	receive(t, started, 10*time.Second, "the attempt to start")
	a, err := rt.Inspector().Attempt(ctx, id, 1)
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if a.Outcome != "" || a.Worker != rt.InstanceID() || a.StartedAt == 0 || a.FinishedAt != 0 {
		t.Fatalf("running attempt %+v, want no outcome, worker %s, a start and no finish", a, rt.InstanceID())
	}
}
