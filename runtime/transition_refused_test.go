package runtime

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// refusalObserver sends each refused transition it is told of on refused.
type refusalObserver struct {
	attemptObserver
	refused chan [2]State
}

func (o refusalObserver) TransitionRefused(from, to State) { o.refused <- [2]State{from, to} }

// TestStaleWorkerWriteCounted: an attempt whose lease was taken while it
// ran (a stale worker) has its outcome refused by the database; the
// runtime logs that with the code WF_STATE_TRANSITION_INVALID and tells a
// TransitionRefusedObserver (running → succeeded), and the row is the
// thief's.
func TestStaleWorkerWriteCounted(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig(dsn)
		// Renewals (every third of the lease) do not come within the
		// test's window, so the lease is found lost by the write itself.
		cfg.LeaseDuration = 3 * time.Minute
		logs := &syncBuffer{}
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
		obs := refusalObserver{attemptObserver: attemptObserver{done: make(chan struct{}, 1)}, refused: make(chan [2]State, 4)}
		cfg.Observer = obs
		rt := startRuntime(t, cfg)
		db, in := openDB(t, dsn)
		started, release := make(chan struct{}, 1), make(chan struct{})
		def := &TaskDef{Name: "stale", Policy: fastPolicy(3), Run: func(ctx context.Context, args []byte) error {
			started <- struct{}{}
			<-release
			return nil
		}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		receive(t, started, 10*time.Second, "the attempt to start")
		if _, err := db.Exec("UPDATE argo_task SET lease_owner = 'thief', lease_until = ? WHERE id = ?", toMillis(time.Now().Add(time.Hour)), id); err != nil {
			t.Fatal(err)
		}
		close(release)
		got := receive(t, obs.refused, 10*time.Second, "the refused transition")
		if got != [2]State{StateRunning, StateSucceeded} {
			t.Fatalf("refused %s → %s, want running → succeeded", got[0], got[1])
		}
		waitFor(t, 5*time.Second, "the warning with its code", func() bool {
			return strings.Contains(logs.String(), "code="+CodeTransitionInvalid)
		})
		if task, err := in.Get(context.Background(), id); err != nil || task.State != StateRunning || task.LeaseOwner != "thief" {
			t.Fatalf("row after the refused write: %+v, %v; want it running, the thief's", task, err)
		}
	})
}
