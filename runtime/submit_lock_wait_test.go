package runtime

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// A Submit that runs its call at once writes the row already leased. When
// its INSERT waits on SQLite's write lock for longer than LeaseDuration, the
// lease it wrote (from when the submit began) has ended by the time the row
// lands: the fault checker's charged-unrun (SQLite, seed 132636162155299),
// where the attempt was cancelled before it ran and the rescuer charged it
// lease_expired, so that a call with no retry left could end dead unrun. The
// lease must be this instance's from when the INSERT is answered: the
// function runs under a lease still live on the database, once, as attempt
// 1 (a Sync call in Submit itself), and no lease_expired attempt is recorded.
func TestSubmitWaitingOnWriteLockLongerThanLease(t *testing.T) {
	for _, thread := range []Thread{Async, Sync} {
		t.Run(fmt.Sprint(thread), func(t *testing.T) {
			dsn := testdb.SQLiteDSN(t)
			cfg := testConfigT(t, dsn)
			rt := startRuntime(t, cfg)
			var calls atomic.Int32
			var leaseLeft atomic.Int64 // ms of lease left on the database when the function started
			def := &TaskDef{Name: "lock.wait", Thread: thread, Policy: fastPolicy(1), Run: func(ctx context.Context, _ []byte) error {
				calls.Add(1)
				id, _, _ := AttemptFrom(ctx)
				task, err := rt.Inspector().Get(ctx, id)
				if err != nil {
					return err
				}
				leaseLeft.Store(int64(task.LeaseUntil - toMillis(rt.now())))
				return nil
			}}
			if err := rt.Register(def); err != nil {
				t.Fatal(err)
			}

			// Another connection holds SQLite's write lock (BEGIN IMMEDIATE).
			other, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(dsn, "sqlite:")+"?_pragma=busy_timeout(20000)&_txlock=immediate")
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			tx, err := other.Begin()
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				id  int64
				err error
			}
			done := make(chan result, 1)
			began := time.Now()
			go func() {
				id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
				done <- result{id, err}
			}()
			// The fault itself: the lock is held for longer than the lease
			// while the submit waits.
			select {
			case r := <-done:
				t.Fatalf("Submit returned (%d, %v) while the write lock was held", r.id, r.err)
			case <-time.After(cfg.LeaseDuration + cfg.LeaseDuration/2):
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.err != nil {
				t.Fatalf("Submit: %v, want nil (the call run once, at once)", r.err)
			}
			if waited := time.Since(began); waited < cfg.LeaseDuration {
				t.Fatalf("the submit waited %s, want more than the lease (%s)", waited, cfg.LeaseDuration)
			}
			if thread == Sync && calls.Load() != 1 {
				t.Fatalf("%d calls when the Sync Submit returned, want 1", calls.Load())
			}
			task := waitSucceeded(t, rt, r.id, 20*time.Second)
			if n := calls.Load(); n != 1 || task.ExecuteTimes != 1 {
				t.Fatalf("%d calls, execute_times %d: want one call, attempt 1", n, task.ExecuteTimes)
			}
			if left := leaseLeft.Load(); left <= 0 {
				t.Fatalf("the function started with its lease ended on the database %d ms before, want it live", -left)
			}
			if h := historyOf(t, rt, r.id); h != "1:succeeded" {
				t.Fatalf("history %q, want 1:succeeded (no lease_expired attempt for an attempt that never ran)", h)
			}
		})
	}
}
