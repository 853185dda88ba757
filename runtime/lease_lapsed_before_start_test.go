package runtime

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// A claimed task whose lease lapsed here before its function started (a
// claim whose answer came back late, past the lease's local deadline) is
// given back with its attempt undone, not left to the rescuer, which would
// charge an attempt that never ran (the fault checker's charged-unrun,
// seed 7 on MariaDB after a server restart). The function is not called.
func TestLeaseLapsedBeforeStartGivesTheRowBack(t *testing.T) {
	for _, engine := range []string{"sqlite", "mysql"} {
		t.Run(engine, func(t *testing.T) {
			var dsn string
			if engine == "sqlite" {
				dsn = testdb.SQLiteDSN(t)
			} else {
				dsn = testdb.MySQLDSN(t)
			}
			cfg := testConfig(dsn)
			rt := startRuntime(t, cfg)
			ctx := context.Background()
			// A name this runtime has no handler for: its poller leaves the
			// row alone, and the test hands the claimed row to run itself.
			const name = "lapse.before.start"
			now := nowMillis()
			mustInsert(t, rt.store, sampleTask(name, StatePending, now-1000, 0))
			tasks, err := rt.store.ClaimDue(ctx, rt.cfg.InstanceID, now, now+Millis(cfg.LeaseDuration/time.Millisecond), 1, []string{name}, nil)
			if err != nil || len(tasks) != 1 {
				t.Fatalf("claim: %v, %d tasks", err, len(tasks))
			}
			task := tasks[0]
			if task.LeaseOwner != rt.cfg.InstanceID {
				t.Fatalf("claimed for %q, want this runtime (%q)", task.LeaseOwner, rt.cfg.InstanceID)
			}
			// The claim's answer came back a lease later: its local deadline
			// has passed.
			task.LeaseUntil -= Millis(2 * cfg.LeaseDuration / time.Millisecond)
			lease := leaseKey{ID: task.ID, Attempt: task.ExecuteTimes}
			rt.leases.add(lease, rt.leaseSentAt(task.LeaseUntil))
			defer rt.leases.remove(lease)
			waitFor(t, 5*time.Second, "the lease to lapse here", func() bool { return rt.leases.lapsedHere(lease) })

			var called atomic.Bool
			h := &TaskDef{Name: name, Policy: fastPolicy(1), Run: func(context.Context, []byte) error { called.Store(true); return nil }}
			if rt.reserve(1) != 1 {
				t.Fatal("no worker free")
			}
			err = rt.run(ctx, task, h, false, false)
			if !errors.Is(err, ErrLeaseLost) {
				t.Fatalf("run: %v, want ErrLeaseLost", err)
			}
			if called.Load() {
				t.Fatal("the function ran under a lapsed lease")
			}
			waitFor(t, 10*time.Second, "the row to be given back", func() bool {
				got, err := rt.Inspector().Get(ctx, task.ID)
				return err == nil && got.State == StatePending
			})
			got, err := rt.Inspector().Get(ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.ExecuteTimes != 0 || got.LeaseOwner != "" {
				t.Fatalf("given back with execute_times %d, lease owner %q; want 0 and none (the attempt undone)", got.ExecuteTimes, got.LeaseOwner)
			}
			if h := historyOf(t, rt, task.ID); h != "" {
				t.Fatalf("history %q, want none: an attempt that never started is not charged", h)
			}
		})
	}
}
