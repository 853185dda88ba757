package mysqldriver_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/storage/mysqldriver"
	"github.com/argo-retry/argo/internal/testdb"
)

// The one-trip path (multi-statement queries: batched finishes, the
// claim's takes, the batched gated claim) runs on a MariaDB server and
// never on a Galera node, where a multi-statement transaction is not
// atomic (galera.go): there every write goes statement by statement.
func TestOneTripNotOnGalera(t *testing.T) {
	for _, b := range testdb.ConformanceBackends(t) {
		if b.Name == "sqlite" {
			continue
		}
		t.Run(b.Name, func(t *testing.T) {
			s := openStore(t, b.FreshDSN(t), true)
			d := s.Driver().(*mysqldriver.Driver)
			batch, ok, err := d.BeginFlowBatch(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				batch.Close()
			}
			want := b.Name != "galera"
			if ok != want || s.OnetripInUse() != want {
				t.Fatalf("on %s the batched gated claim is used: %v, the one-trip path: %v; want %v", b.Name, ok, s.OnetripInUse(), want)
			}
		})
	}
}

// galeraFinishRounds is how many batches TestFinishBatchOnGaleraAllOrNothing
// finishes.
const galeraFinishRounds = 120

// A batch of finishes through node 1 of a multi-writer Galera cluster,
// while node 2 keeps writing the same rows (a column no fence reads), is
// all or nothing and as answered: when the call says a finish held, its
// task is retrying with its attempt row, else the task is still running
// and no attempt row was written. With the one-trip path on Galera, a
// batch aborted half-way by node 2's write set ran its last statements in
// autocommit and answered COMMIT OK (galera.go): finishes answered held
// were lost, and attempt rows written for tasks left running.
func TestFinishBatchOnGaleraAllOrNothing(t *testing.T) {
	db := testdb.GaleraCluster(t).NewDatabase(t) // holds the cluster lock (shared) until t ends
	s1 := openStore(t, db.DSN(1), true)
	s2 := openStore(t, db.DSN(2), true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const perBatch = 6
	answered, refused := 0, 0
	for round := range galeraFinishRounds {
		now := storage.Millis(1_000_000 + 1000*round)
		var fs []storage.Finishing
		var ids []any
		for range perBatch {
			ct := claimedTask(t, s1, fmt.Sprintf("gal.finish.%d", round), "w1", now)
			msg := "failed on purpose"
			fs = append(fs, storage.Finishing{Fence: storage.Fence{ID: ct.ID, Shard: ct.ShardKey, Owner: ct.LeaseOwner, Attempt: ct.ExecuteTimes, From: ct.State},
				To: storage.StateRetrying, Due: now + 60_000, ErrMsg: &msg,
				History: &storage.Attempt{TaskPK: ct.ID, Attempt: ct.ExecuteTimes, Kind: "attempt", Worker: ct.LeaseOwner,
					StartedAt: now, FinishedAt: now, Outcome: argotype.OutcomeFailed, Error: msg}})
			ids = append(ids, ct.ID)
		}
		waitFor(ctx, t, s2, "node 2 to see the round's tasks running", func(s *storage.Store) (bool, error) {
			got, err := s.Get(ctx, ids[len(ids)-1].(int64))
			return err == nil && got.State == storage.StateRunning, nil
		})
		// Node 2 writes the rows until the batch has answered.
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			touch := "UPDATE argo_task SET gmt_modified = gmt_modified + 1 WHERE id IN " + storage.Placeholders(len(ids))
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := s2.DB().ExecContext(ctx, touch, ids...); err != nil && !s2.Driver().IsRetryableLockError(err) {
					t.Errorf("node 2 writing the rows: %v", err)
					return
				}
			}
		}()
		errs, err := s1.FinishBatchAsIs(ctx, fs, now+100)
		close(done)
		wg.Wait()
		if err != nil && !s1.Driver().IsRetryableLockError(err) {
			t.Fatalf("round %d: %v", round, err)
		}
		for i, f := range fs {
			held := err == nil && errs[i] == nil
			if err == nil && errs[i] != nil && errs[i] != storage.ErrLeaseLost {
				t.Fatalf("round %d: finish of task %d: %v", round, f.ID, errs[i])
			}
			if held {
				answered++
			} else {
				refused++
			}
			checkFinishAsAnswered(ctx, t, s1, f.ID, held)
		}
	}
	t.Logf("%d finishes answered held, %d refused (lock conflicts)", answered, refused)
}

// checkFinishAsAnswered fails the test unless task id is as its finish was
// answered, read on s's node after it applied everything certified: held,
// retrying with one attempt row; else running with none.
func checkFinishAsAnswered(ctx context.Context, t *testing.T, s *storage.Store, id int64, held bool) {
	t.Helper()
	conn, err := s.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET SESSION wsrep_sync_wait = 1"); err != nil {
		t.Fatal(err)
	}
	var state storage.State
	var attempts int
	if err := conn.QueryRowContext(ctx, "SELECT task_status, (SELECT COUNT(*) FROM argo_task_attempt WHERE task_pk = ?) FROM argo_task WHERE id = ?", id, id).Scan(&state, &attempts); err != nil {
		t.Fatal(err)
	}
	want, wantAttempts := storage.StateRunning, 0
	if held {
		want, wantAttempts = storage.StateRetrying, 1
	}
	if state != want || attempts != wantAttempts {
		t.Errorf("task %d, its finish answered held=%v: %s with %d attempt rows, want %s with %d", id, held, state, attempts, want, wantAttempts)
	}
}
