package runtime

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// A session holds a flow group's row lock and does not end (a client that
// vanished mid-transaction, its server session left open: the fault check
// found one, seed 2 of claimcut,kill9, holding argo_flow's row of fc-rate
// for the rest of the run). Every gated claim of the group waits for the
// lock; the poller must go on claiming and starting the other tasks
// meanwhile, each started while its lease holds, run once as attempt 1.
// Before: the poller waited the server's lock wait timeout (50 s) in each
// gated claim, claiming nothing else (the fault check's instances left
// 147–284 calls pending, due 50 s earlier), and the tasks it had taken just
// before waited unstarted with it while their leases ran out (charged
// lease_expired attempts that never ran).
func TestClaimsGoOnWhileAFlowGroupIsLocked(t *testing.T) {
	for _, c := range []struct {
		name string
		wait time.Duration // flowClaimWait; 0: the default
	}{
		// The poller is not held up by the locked group for long.
		{"default bound", 0},
		// Even a gated claim that waits longer than the lease does not hold
		// back the tasks claimed before it: they start at once.
		{"bound past the lease", 4 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.wait > 0 {
				saved := flowClaimWait
				flowClaimWait = func(time.Duration) time.Duration { return c.wait }
				t.Cleanup(func() { flowClaimWait = saved })
			}
			claimsGoOnWhileAFlowGroupIsLocked(t)
		})
	}
}

// insertDueTx is insertDue inside tx.
func insertDueTx(t *testing.T, rt *Runtime, tx Execer, def *TaskDef, m string) int64 {
	t.Helper()
	p, err := rt.prepare(def)
	if err != nil {
		t.Fatal(err)
	}
	task := rt.newTask(Call{Task: def, Args: markerArgs(m)}, p, rt.now())
	if err := rt.store.Insert(context.Background(), tx, task); err != nil {
		t.Fatal(err)
	}
	return task.ID
}

func claimsGoOnWhileAFlowGroupIsLocked(t *testing.T) {
	dsn := testdb.MySQLDSN(t)
	cfg := testConfigT(t, dsn) // leases of 2 s
	rt := startRuntime(t, cfg)
	var log runLog
	var mu sync.Mutex
	late := map[string]string{} // plain calls started after their lease ended
	plain := &TaskDef{Name: "lockwait.plain", Policy: fastPolicy(3), Run: func(ctx context.Context, args []byte) error {
		m := log.add(ctx, args)
		id, attempt, _ := AttemptFrom(ctx)
		row, err := rt.Inspector().Get(context.Background(), id)
		if err == nil && (row.LeaseOwner != rt.cfg.InstanceID || row.LeaseUntil <= toMillis(rt.now())) {
			mu.Lock()
			late[m] = fmt.Sprintf("attempt %d started with its row leased to %q until %s, now %s", attempt, row.LeaseOwner, row.LeaseUntil.Time().Format(time.TimeOnly+".000"), rt.now().Format(time.TimeOnly+".000"))
			mu.Unlock()
		}
		return nil
	}}
	gated := &TaskDef{Name: "lockwait.rated", Policy: fastPolicy(3), Flow: &FlowControl{Group: "lockwait", Rate: 100},
		Run: func(ctx context.Context, args []byte) error { log.add(ctx, args); return nil }}
	for _, d := range []*TaskDef{plain, gated} {
		if err := rt.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	// The group's row exists once a gated claim took a call.
	waitState(t, rt, insertDue(t, rt, gated, "g0"), StateSucceeded, 20*time.Second)

	// Another session takes the group's row lock and keeps it.
	db, _ := openDB(t, dsn)
	ctx := context.Background()
	holder, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	var group string
	if err := holder.QueryRowContext(ctx, "SELECT group_name FROM argo_flow WHERE group_name = ? FOR UPDATE", "lockwait").Scan(&group); err != nil {
		t.Fatalf("locking the group's row: %v", err)
	}
	// A gated call and plain calls due together (one transaction): the
	// poll that claims the plain calls then waits in the gated claim; the
	// plain calls must not wait with it.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	g1 := insertDueTx(t, rt, tx, gated, "g1")
	var ids []int64
	for i := range 3 {
		ids = append(ids, insertDueTx(t, rt, tx, plain, fmt.Sprintf("p%d", i)))
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// Each runs once, as attempt 1, started under its lease.
	waitPlain := func(ids []int64, from int) {
		for i, id := range ids {
			waitState(t, rt, id, StateSucceeded, 10*time.Second)
			m := fmt.Sprintf("p%d", from+i)
			if h := historyOf(t, rt, id); h != "1:succeeded" {
				t.Errorf("plain call %s: history %q, runs %v; want 1:succeeded", m, h, log.get(m))
			}
		}
	}
	waitPlain(ids, 0)
	// Plain calls due while the poll that took the first ones waits in the
	// gated claim: the poller claims them too, the group still locked.
	ids = ids[:0]
	for i := 3; i < 6; i++ {
		ids = append(ids, insertDue(t, rt, plain, fmt.Sprintf("p%d", i)))
	}
	waitPlain(ids, 3)
	if row, err := rt.Inspector().Get(ctx, g1); err != nil || row.State != StatePending {
		t.Fatalf("gated call while its group is locked: %+v, %v; want pending", row, err)
	}
	mu.Lock()
	for m, why := range late {
		t.Errorf("plain call %s: %s; want it started while its lease held", m, why)
	}
	mu.Unlock()
	// The lock released, the gated call runs too.
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	waitState(t, rt, g1, StateSucceeded, 20*time.Second)
	if h := historyOf(t, rt, g1); h != "1:succeeded" {
		t.Errorf("gated call: history %q; want 1:succeeded", h)
	}
}
