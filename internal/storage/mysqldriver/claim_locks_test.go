package mysqldriver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/storage/mysqldriver"
	"github.com/argo-retry/argo/internal/testdb"
)

// sampleTask is a task row as a submit writes one.
func sampleTask(name string, state storage.State, due storage.Millis, shard int) *storage.Task {
	return &storage.Task{Name: name, State: state, MaxAttempts: 3, ExecuteTime: due, Parameter: `{"a":1}`, PerformanceWay: argotype.Immediate, ThreadWay: argotype.Async,
		ShardKey: shard, GmtCreate: due, GmtModified: due}
}

func mustInsert(t *testing.T, s *storage.Store, tasks ...*storage.Task) {
	t.Helper()
	for _, task := range tasks {
		if err := s.Insert(context.Background(), nil, task); err != nil {
			t.Fatal(err)
		}
	}
}

// dbx is the store's handle with sqlx's helpers.
func dbx(s *storage.Store) *sqlx.DB { return sqlx.NewDb(s.DB(), s.Dialect()) }

// On MariaDB a 10-row claim of one shard, with 40 due rows in 4 shards,
// locks only the 10 rows it takes. The claim's statements (the plain read of
// candidates, then ClaimTake per candidate, as Driver.Claim and ExecRowwise
// send them) run on one connection with the transaction left open, and each
// row is probed from another connection with SELECT … FOR UPDATE NOWAIT.
// (MariaDB's INNODB_TRX.trx_rows_locked is no row count: it reports 80 for a
// one-row UPDATE here.) For comparison the log gives the count for the
// locking read the claim used before (SELECT … FOR UPDATE SKIP LOCKED).
func TestClaimLocksOnlyRowsItTakes(t *testing.T) {
	s := openStore(t, testdb.MySQLDSN(t), false)
	ctx := context.Background()
	var all []int64
	for i := range 40 {
		task := sampleTask("l", storage.StatePending, storage.Millis(100+i), i%4)
		mustInsert(t, s, task)
		all = append(all, task.ID)
	}
	// The driver's candidate read, scoped to one name and shard.
	candidates := mysqldriver.ClaimCandidates("((task_id IN (?) AND shard_key IN (?)))")
	args := []any{storage.Millis(1000), storage.Millis(1000), "l", 3}
	rowsLocked := func(lockingRead bool) int {
		conn, err := dbx(s).Connx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, q := range []string{"SET TRANSACTION ISOLATION LEVEL READ COMMITTED", "START TRANSACTION"} {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		defer conn.ExecContext(ctx, "ROLLBACK")
		q := candidates
		if lockingRead {
			q += " FOR UPDATE SKIP LOCKED"
		}
		var cands []*storage.Task
		if err := conn.SelectContext(ctx, &cands, q, append(args, 10)...); err != nil {
			t.Fatal(err)
		}
		if len(cands) != 10 {
			t.Fatalf("%d candidates, want 10", len(cands))
		}
		if !lockingRead {
			for _, c := range cands {
				res, err := conn.ExecContext(ctx, s.ClaimFenceSQL(), "me", storage.Millis(5000), storage.Millis(1000), c.ID, c.ShardKey, c.State, c.ExecuteTimes, storage.Millis(1000), storage.Millis(1000))
				if err != nil {
					t.Fatal(err)
				}
				if n, _ := res.RowsAffected(); n != 1 {
					t.Fatalf("candidate %d not taken", c.ID)
				}
			}
		}
		// Probe every row from another connection: a row lock held by the
		// claim makes a locking read of that row fail at once.
		locked := 0
		for _, id := range all {
			var got int64
			err := dbx(s).QueryRowContext(ctx, "SELECT id FROM argo_task WHERE id = ? FOR UPDATE NOWAIT", id).Scan(&got)
			switch {
			case err == nil:
			case storage.IsRetryableLockError(err) || strings.Contains(err.Error(), "3572"):
				locked++
			default:
				t.Fatal(err)
			}
		}
		return locked
	}
	before := rowsLocked(true)
	after := rowsLocked(false)
	t.Logf("a 10-row claim of one shard of 4 (40 due rows): the locking read locks %d rows; the claim (plain read, fenced UPDATEs by primary key) locks %d", before, after)
	if after > 10 {
		t.Fatalf("the claim locks %d rows, want at most the 10 it takes", after)
	}
}

// An INSERT (a submit) never waits on an open claim or held-retry start on
// MariaDB: with both left uncommitted on one connection, another connection
// inserts a due pending row and a leased running row at once (a lock wait
// of 1 s fails the test). For comparison the log says whether the held start
// argo used before (SELECT … FOR UPDATE over idx_lease at REPEATABLE READ)
// blocked the same INSERT.
func TestOpenClaimAndHeldStartDoNotBlockInserts(t *testing.T) {
	s := openStore(t, testdb.MySQLDSN(t), false)
	ctx := context.Background()
	var due, running, held []*storage.Task
	for i := range 40 {
		task := sampleTask("i", storage.StatePending, storage.Millis(100+i), i%4)
		switch i % 4 {
		case 1:
			task.State, task.ExecuteTimes, task.LeaseOwner, task.LeaseUntil = storage.StateRunning, 1, "me", storage.Millis(4000+i)
			running = append(running, task)
		case 2:
			task.State, task.ExecuteTimes, task.LeaseOwner, task.LeaseUntil = storage.StateRetrying, 1, "me", storage.Millis(5000+i)
			held = append(held, task)
		default:
			due = append(due, task)
		}
		mustInsert(t, s, task)
	}
	if _, err := dbx(s).ExecContext(ctx, "ANALYZE TABLE argo_task"); err != nil {
		t.Fatal(err)
	}
	// insertBlocked inserts, on its own connection with a 1 s lock wait, a
	// due pending row and a running row whose lease sorts just before the
	// holds in idx_lease, and reports whether either waited out the second.
	insertBlocked := func() bool {
		conn, err := dbx(s).Connx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
			t.Fatal(err)
		}
		pending := sampleTask("i", storage.StatePending, 150, 1)
		leased := sampleTask("i", storage.StateRunning, 150, 1)
		leased.ExecuteTimes, leased.LeaseOwner, leased.LeaseUntil = 1, "you", 4999
		blocked := false
		for _, task := range []*storage.Task{pending, leased} {
			_, err := conn.ExecContext(ctx, s.Driver().SQL().InsertTask, append(storage.InsertArgs(task), storage.NewSubmitToken())...)
			switch {
			case err == nil:
			case storage.IsRetryableLockError(err):
				blocked = true
			default:
				t.Fatal(err)
			}
		}
		return blocked
	}
	open := func(iso string, stmts func(conn *sqlx.Conn)) *sqlx.Conn {
		conn, err := dbx(s).Connx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"SET TRANSACTION ISOLATION LEVEL " + iso, "START TRANSACTION"} {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		stmts(conn)
		return conn
	}
	closeTx := func(conn *sqlx.Conn) {
		conn.ExecContext(ctx, "ROLLBACK")
		conn.Close()
	}

	// Before: the held start's locking read (REPEATABLE READ, the session default).
	var tuples []string
	var targs []any
	for _, h := range held {
		tuples = append(tuples, "(?, ?, ?, ?)")
		targs = append(targs, h.ID, h.ShardKey, h.ExecuteTimes, h.LeaseUntil)
	}
	old := open("REPEATABLE READ", func(conn *sqlx.Conn) {
		var ids []int64
		q := "SELECT id FROM argo_task WHERE (id, shard_key, execute_times, lease_until) IN (" + strings.Join(tuples, ", ") + ") AND task_status = 2 AND lease_owner = ? FOR UPDATE"
		if err := conn.SelectContext(ctx, &ids, q, append(targs, "me")...); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("the former held start's locking read blocks a submit's INSERT: %v", insertBlocked())
	closeTx(old)

	// After: the claim's and the held start's statements, as execRowwise runs them.
	conn := open("READ COMMITTED", func(conn *sqlx.Conn) {
		for _, c := range due {
			if _, err := conn.ExecContext(ctx, s.ClaimFenceSQL(), "me", storage.Millis(9000), storage.Millis(1000), c.ID, c.ShardKey, c.State, c.ExecuteTimes, storage.Millis(1000), storage.Millis(1000)); err != nil {
				t.Fatal(err)
			}
		}
		for _, h := range held {
			if _, err := conn.ExecContext(ctx, s.HeldStartSQL(), storage.Millis(9000), storage.Millis(1000), h.ID, h.ShardKey, h.State, "me", h.ExecuteTimes, h.LeaseUntil); err != nil {
				t.Fatal(err)
			}
		}
	})
	defer closeTx(conn)
	if insertBlocked() {
		t.Fatal("a submit's INSERT waited on an open claim and held start")
	}
}
