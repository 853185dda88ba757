package runtime

import (
	"context"
	"database/sql"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// TestStopDuringCommitWatchClaimLeavesNoOrphan: Stop comes while a
// SubmitTx's commit watcher claims the row its call wrote. On MariaDB a
// statement whose client gives up (its context canceled) still runs on the
// server once it gets its locks, and commits: before the fix the watcher
// claimed on the runtime's context, which Stop cancels, so the claim came
// back canceled while the server wrote it, and the row stayed leased to
// the stopped instance with nothing to run it, to be charged a
// lease_expired attempt that never ran (the fault checker's charged-unrun,
// MariaDB seed 141589154925663). Here the row is locked by another
// transaction while the watcher's UPDATE waits; Stop begins; the lock is
// released. The call must then run (the claim is not cut short: the
// reservation it holds keeps Stop waiting for the attempt), or be given
// back with its attempt undone; never left leased by a stopped instance.
func TestStopDuringCommitWatchClaimLeavesNoOrphan(t *testing.T) {
	dsn := testdb.MySQLDSN(t)
	ctx := context.Background()
	cfg := testConfig(dsn)
	cfg.PollInterval = 30 * time.Second // the watcher claims, not the poller
	cfg.LeaseDuration = 30 * time.Second
	// No scheduled holds: a hold read whose now was taken just before the
	// submit sees the row due later and holds it, and its UPDATE, not the
	// watcher's, is the one that waits for the lock.
	cfg.RetryHold = -1
	// Free workers for the watcher while the poller claims (it reserves
	// ClaimBatch workers for each claim; a watcher that finds none leaves
	// the row to the poller).
	cfg.Workers, cfg.ClaimBatch = 8, 1
	rt := startRuntime(t, cfg)
	var ran atomic.Int32
	def := &TaskDef{Name: "watch.stop", Policy: fastPolicy(3), Run: func(context.Context, []byte) error {
		ran.Add(1)
		return nil
	}}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	db, _ := openDB(t, dsn)

	// When the watcher is about to claim, lock the row from another
	// transaction, so that its UPDATE waits for the lock.
	var lockTx *sql.Tx
	locked := make(chan error, 1)
	hook := func(id int64) {
		tx, err := db.BeginTx(ctx, nil)
		if err == nil {
			_, err = tx.ExecContext(ctx, "SELECT id FROM argo_task WHERE id = ? FOR UPDATE", id)
		}
		lockTx = tx
		locked <- err
	}
	watchClaimBegins.Store(&hook)
	t.Cleanup(func() { watchClaimBegins.Store(nil) })

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := rt.SubmitTx(ctx, tx, Call{Task: def, Args: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-locked:
		if err != nil {
			t.Fatalf("locking the row: %v", err)
		}
	case <-time.After(30 * time.Second):
		var state State
		var owner string
		err := db.QueryRowContext(ctx, "SELECT task_status, lease_owner FROM argo_task WHERE id = ?", id).Scan(&state, &owner)
		t.Fatalf("the commit watcher never began its claim (task %d: %s, leased to %q, %v; its function ran %d times)", id, state, owner, err, ran.Load())
	}
	defer lockTx.Rollback()
	deadline := time.Now().Add(30 * time.Second)
	for updatesRunning(t, db, "%submit_token%") == 0 {
		if time.Now().After(deadline) {
			var state State
			var owner string
			err := db.QueryRowContext(ctx, "SELECT task_status, lease_owner FROM argo_task WHERE id = ?", id).Scan(&state, &owner)
			t.Fatalf("the watcher's claim never waited for the row lock (task %d: %s, leased to %q, %v; its function ran %d times)", id, state, owner, err, ran.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}

	stopped := make(chan error, 1)
	go func() { stopped <- rt.Stop(context.Background()) }()
	waitFor(t, 30*time.Second, "Stop to cancel the runtime's context", func() bool { return rt.ctx.Err() != nil })
	if err := lockTx.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Logf("Stop: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Stop did not return")
	}
	// The UPDATE the server may still be running lands before this reads.
	waitFor(t, 30*time.Second, "the claim's UPDATE to end on the server", func() bool {
		return updatesRunning(t, db, "%") == 0
	})
	var state State
	var attempts int
	var owner string
	if err := db.QueryRowContext(ctx, "SELECT task_status, execute_times, lease_owner FROM argo_task WHERE id = ?", id).Scan(&state, &attempts, &owner); err != nil {
		t.Fatal(err)
	}
	switch {
	case state == StateSucceeded && ran.Load() == 1:
	case state == StatePending && attempts == 0 && owner == "" && ran.Load() == 0:
	default:
		t.Fatalf("after Stop, task %d is %s, attempt %d, leased to %q, its function ran %d times: want succeeded (ran once) or given back pending (not run)", id, state, attempts, owner, ran.Load())
	}
}

// updatesRunning counts the UPDATEs of argo_task the server is running
// (or waiting to run: an autocommit statement waiting for a row lock is
// not in INNODB_TRX) in db's database whose text is LIKE pattern.
func updatesRunning(t *testing.T, db *sql.DB, pattern string) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND INFO LIKE 'UPDATE argo_task%' AND INFO LIKE ?", pattern).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
