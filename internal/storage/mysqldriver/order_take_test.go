package mysqldriver_test

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
)

// TestKeyedTakesOfOneKeySerialise: two takes of calls of one key at the
// same moment, each of which alone would see its key free, do not both
// succeed. Take A (of M) has locked key k, started M and made it the key's
// holder, and not yet committed; take B (of P, a call of k with a smaller
// id that became visible meanwhile, as an outbox commit makes it) waits
// for A's lock, then sees M running and leaves P. Without the key's lock B
// read M as pending (A's write is not committed) and took P: two calls of
// one key running.
func TestKeyedTakesOfOneKeySerialise(t *testing.T) {
	for _, onetrip := range []bool{false, true} {
		s := openStore(t, testdb.MySQLDSN(t), onetrip)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		p := sampleTask("ser", storage.StatePending, 1_000_000, 0)
		m := sampleTask("ser", storage.StatePending, 100, 0)
		m.OrderKey = sql.NullString{String: "k", Valid: true}
		for _, task := range []*storage.Task{p, m} {
			if err := s.Insert(ctx, nil, task); err != nil {
				t.Fatal(err)
			}
		}
		a, err := s.DB().BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Rollback()
		for _, q := range []struct {
			query string
			args  []any
		}{
			{"INSERT INTO argo_order_lock (order_key, holder, takes) VALUES ('k', 0, 0) ON DUPLICATE KEY UPDATE takes = takes", nil},
			{"UPDATE argo_task SET task_status = ?, execute_times = 1, lease_owner = 'a', lease_until = 60000 WHERE id = ?", []any{storage.StateRunning, m.ID}},
			{"UPDATE argo_order_lock SET holder = ?, takes = takes + 1 WHERE order_key = 'k'", []any{m.ID}},
		} {
			if _, err := a.ExecContext(ctx, q.query, q.args...); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.DB().ExecContext(ctx, "UPDATE argo_task SET order_key = 'k', execute_time = 100 WHERE id = ?", p.ID); err != nil {
			t.Fatal(err)
		}
		asRead, err := s.Get(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			took []*storage.Task
			err  error
		}
		done := make(chan result, 1)
		go func() {
			took, err := s.TakeCandidates(ctx, "b", 300, 300, 60_000, []*storage.Task{asRead})
			done <- result{took, err}
		}()
		// B either returns at once (it did not wait for A) or waits for A's
		// lock: a statement of B's on the key's row is executing (A's
		// finished already).
		var early *result
		for deadline := time.Now().Add(30 * time.Second); early == nil; {
			select {
			case r := <-done:
				early = &r
			default:
			}
			if early != nil {
				break
			}
			var waits int
			if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE info LIKE 'INSERT INTO argo_order_lock%' OR info LIKE 'UPDATE argo_order_lock%'").Scan(&waits); err != nil {
				t.Fatal(err)
			}
			if waits > 0 {
				break
			}
			if time.Now().After(deadline) {
				rows, _ := s.DB().QueryContext(ctx, "SELECT COALESCE(info,''), COALESCE(state,'') FROM information_schema.PROCESSLIST")
				for rows != nil && rows.Next() {
					var info, state string
					rows.Scan(&info, &state)
					t.Logf("%s | %s", state, info)
				}
				rows, _ = s.DB().QueryContext(ctx, "SELECT trx_state, COALESCE(trx_query,'') FROM information_schema.INNODB_TRX")
				for rows != nil && rows.Next() {
					var info, state string
					rows.Scan(&state, &info)
					t.Logf("trx %s | %s", state, info)
				}
				t.Fatal("take B neither returned nor waited for a lock")
			}
			time.Sleep(5 * time.Millisecond) // polling interval of the condition above
		}
		if err := a.Commit(); err != nil {
			t.Fatal(err)
		}
		r := early
		if r == nil {
			got := <-done
			r = &got
		}
		if r.err != nil {
			t.Fatal(r.err)
		}
		if len(r.took) != 0 {
			t.Fatalf("onetrip %v: take B took %v while take A started call %d of the same key", onetrip, idsOf(r.took), m.ID)
		}
	}
}

func idsOf(tasks []*storage.Task) []int64 {
	var ids []int64
	for _, t := range tasks {
		ids = append(ids, t.ID)
	}
	slices.Sort(ids)
	return ids
}

// TestKeyedTakesOfOneKeyOnTwoGaleraNodes: on a multi-writer Galera cluster
// the key's row lock is local to a node, but every take of a key changes
// the key's row, so two takes of one key on two nodes conflict at
// certification: take A (node 1) has started M and not committed; take B
// (node 2) of P, a call of the same key, does not wait for A's lock and may
// take P; then A's commit is refused. Never do both succeed.
func TestKeyedTakesOfOneKeyOnTwoGaleraNodes(t *testing.T) {
	db := testdb.GaleraCluster(t).NewDatabase(t)
	s1 := openStore(t, db.DSN(1), false)
	s2 := openStore(t, db.DSN(2), false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Two task names (a key is shared across names): two rows of one name
	// can conflict at certification through the name's unique key
	// (task_id, unique_key) alone, which would hide what this test checks.
	p := sampleTask("gal.p", storage.StatePending, 1_000_000, 0)
	m := sampleTask("gal.m", storage.StatePending, 100, 0)
	m.OrderKey = sql.NullString{String: "k", Valid: true}
	for _, task := range []*storage.Task{p, m} {
		if err := s1.Insert(ctx, nil, task); err != nil {
			t.Fatal(err)
		}
	}
	// The key's row exists already (an earlier take of k): locking it
	// changes nothing, so only the take's holder write can conflict.
	if _, err := s1.DB().ExecContext(ctx, "INSERT INTO argo_order_lock (order_key, holder, takes) VALUES ('k', 0, 1)"); err != nil {
		t.Fatal(err)
	}
	a, err := s1.DB().BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Rollback()
	for _, q := range []struct {
		query string
		args  []any
	}{
		{"INSERT INTO argo_order_lock (order_key, holder, takes) VALUES ('k', 0, 0) ON DUPLICATE KEY UPDATE takes = takes", nil},
		{"UPDATE argo_task SET task_status = ?, execute_times = 1, lease_owner = 'a', lease_until = 60000 WHERE id = ?", []any{storage.StateRunning, m.ID}},
		{"UPDATE argo_order_lock SET holder = ?, takes = takes + 1 WHERE order_key = 'k'", []any{m.ID}},
	} {
		if _, err := a.ExecContext(ctx, q.query, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s1.DB().ExecContext(ctx, "UPDATE argo_task SET order_key = 'k', execute_time = 100 WHERE id = ?", p.ID); err != nil {
		t.Fatal(err)
	}
	var asRead *storage.Task
	for deadline := time.Now().Add(30 * time.Second); ; {
		var locks int
		if err := s2.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM argo_order_lock WHERE order_key = 'k'").Scan(&locks); err != nil {
			t.Fatal(err)
		}
		if asRead, err = s2.Get(ctx, p.ID); err == nil && asRead.OrderKey.Valid && locks == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 2 does not see task %d keyed and key k's row after 30s: %+v, %v", p.ID, asRead, err)
		}
		time.Sleep(10 * time.Millisecond) // polling interval of the condition above
	}
	took, takeErr := s2.TakeCandidates(ctx, "b", 300, 300, 60_000, []*storage.Task{asRead})
	commitErr := a.Commit()
	t.Logf("take B on node 2: took %v, %v; take A's commit on node 1: %v", idsOf(took), takeErr, commitErr)
	if takeErr == nil && len(took) == 1 && commitErr == nil {
		t.Fatalf("both takes of key k committed: B took %d on node 2 while A started %d on node 1", p.ID, m.ID)
	}
}
