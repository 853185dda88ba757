package runtime

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// bareCommit is a COMMIT sent on its own (COM_QUERY 0x03, then the text):
// the one-trip take's second round trip.
const bareCommit = "\x03COMMIT"

// insertDue writes a call of def due now straight into the table, as
// another instance's submit would: only the poller's claim starts it.
func insertDue(t *testing.T, rt *Runtime, def *TaskDef, m string) int64 {
	t.Helper()
	p, err := rt.prepare(def)
	if err != nil {
		t.Fatal(err)
	}
	task := rt.newTask(Call{Task: def, Args: markerArgs(m)}, p, rt.now())
	if err := rt.store.Insert(context.Background(), nil, task); err != nil {
		t.Fatal(err)
	}
	return task.ID
}

// A task with no retry left (MaxAttempts 1) whose claim's COMMIT committed
// but whose answer was lost runs once, as attempt 1, and succeeds: the
// instance gives the row back, attempt undone, as soon as the database
// answers, instead of leaving it to the rescuer, which charged it a
// lease_expired attempt that never ran (and, with no retry left, it ended
// dead without running).
func TestClaimWhoseCommitAnswerIsLostRunsOnce(t *testing.T) {
	var logs syncBuffer
	rt, proxy := proxiedRuntime(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	var log runLog
	def := &TaskDef{Name: "claim.lost", Policy: fastPolicy(1), Run: func(ctx context.Context, args []byte) error {
		log.add(ctx, args)
		return nil
	}}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	proxy.CutAnswer(bareCommit, 1)
	id := insertDue(t, rt, def, "only")
	waitFor(t, 20*time.Second, "the claim's COMMIT answer lost", func() bool { return proxy.Cuts() == 1 })
	var task *Task
	waitFor(t, 20*time.Second, "the task to end", func() bool {
		var err error
		task, err = rt.Inspector().Get(context.Background(), id)
		return err == nil && task.State.Terminal()
	})
	if h := historyOf(t, rt, id); task.State != StateSucceeded || h != "1:succeeded" {
		t.Fatalf("task ended %s, history %q, runs %v; want succeeded, 1:succeeded (no lease_expired attempt)", task.State, h, log.get("only"))
	}
	if !strings.Contains(logs.String(), "given back") {
		t.Fatalf("the lost answer was not a claim's (no row given back); logs:\n%s", logs.String())
	}
	if got := log.get("only"); len(got) != 1 || got[0] != 1 || task.ExecuteTimes != 1 {
		t.Fatalf("runs %v, execute_times %d: want one run, attempt 1", got, task.ExecuteTimes)
	}
}

// A claim whose outcome is still unknown when Stop cancels the runtime
// (its COMMIT's answer lost, the database unreachable at that moment) is
// given back by Stop once the database answers within its bound: the row
// is pending at attempt 0 afterwards, not running under a lease that the
// rescuer would charge.
func TestStopGivesBackAClaimWhoseOutcomeIsUnknown(t *testing.T) {
	var logs syncBuffer
	dsn := testdb.MySQLDSN(t)
	proxy := testdb.NewFaultProxy(t, dsn)
	cfg := testConfig(proxy.DSN(dsn))
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rt := startRuntime(t, cfg)
	var log runLog
	def := &TaskDef{Name: "claim.stop", Policy: fastPolicy(1), Run: func(ctx context.Context, args []byte) error {
		log.add(ctx, args)
		return nil
	}}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	proxy.RefuseAfterCut()
	proxy.CutAnswer(bareCommit, 1)
	id := insertDue(t, rt, def, "stop")
	waitFor(t, 20*time.Second, "the claim's COMMIT answer lost", func() bool { return proxy.Cuts() == 1 })
	waitFor(t, 20*time.Second, "the claim's rows remembered", func() bool { return rt.store.PendingClaims() == 1 })
	stopped := make(chan error, 1)
	go func() { stopped <- rt.Stop(context.Background()) }()
	// Once the runtime's context is canceled only Stop's own give-back
	// (on a context of its own) can reach the database.
	waitFor(t, 20*time.Second, "Stop to cancel the runtime", func() bool { return rt.ctx.Err() != nil })
	proxy.SetRefusing(false)
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("Stop has not returned after 30 s")
	}
	if n := rt.store.PendingClaims(); n != 0 {
		t.Fatalf("%d rows of the unknown claim left after Stop; logs:\n%s", n, logs.String())
	}
	// Another instance, straight to the database: it finds the row given
	// back and runs it as attempt 1.
	rt2 := startRuntime(t, testConfigT(t, dsn))
	if row, err := rt2.Inspector().Get(context.Background(), id); err != nil || row.State != StatePending || row.ExecuteTimes != 0 || row.LeaseOwner != "" {
		t.Fatalf("row after Stop: %+v, %v; want pending, attempt 0, no lease (given back, attempt undone)", row, err)
	}
	if err := rt2.Register(def); err != nil {
		t.Fatal(err)
	}
	waitState(t, rt2, id, StateSucceeded, 20*time.Second)
	if got := log.get("stop"); len(got) != 1 || got[0] != 1 {
		t.Fatalf("runs %v, want one run, attempt 1", got)
	}
	if h := historyOf(t, rt2, id); h != "1:succeeded" {
		t.Fatalf("history %q, want 1:succeeded (no lease_expired attempt)", h)
	}
}
