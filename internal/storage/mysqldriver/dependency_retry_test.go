package mysqldriver_test

import (
	"context"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
)

// depTask is a plain task row named name, pending and due at due.
func depTask(name string, due storage.Millis) *storage.Task {
	return &storage.Task{Name: name, State: storage.StatePending, MaxAttempts: 3, ExecuteTime: due, Parameter: `{"a":1}`,
		PerformanceWay: argotype.Immediate, ThreadWay: argotype.Async,
		RetryPolicyJSON: `{"max_attempts":3}`, GmtCreate: due, GmtModified: due}
}

// claimedTask inserts a task named name and claims it as owner at now.
func claimedTask(t *testing.T, s *storage.Store, name, owner string, now storage.Millis) *storage.Task {
	t.Helper()
	ctx := context.Background()
	task := depTask(name, now)
	if err := s.Insert(ctx, nil, task); err != nil {
		t.Fatal(err)
	}
	ct, err := s.ClaimByID(ctx, task.ID, task.ShardKey, storage.StatePending, owner, now, now+600_000)
	if err != nil || ct == nil {
		t.Fatalf("claim task %d: %+v, %v", task.ID, ct, err)
	}
	return ct
}

// succeed is the finish of claimed task ct as succeeded at now.
func succeed(ct *storage.Task, now storage.Millis) storage.Finishing {
	return storage.Finishing{Fence: storage.Fence{ID: ct.ID, Shard: ct.ShardKey, Owner: ct.LeaseOwner, Attempt: ct.ExecuteTimes, From: ct.State},
		To: storage.StateSucceeded, Due: ct.ExecuteTime,
		History: &storage.Attempt{TaskPK: ct.ID, Attempt: ct.ExecuteTimes, Kind: "attempt", Worker: ct.LeaseOwner,
			StartedAt: now, FinishedAt: now, Outcome: argotype.OutcomeSucceeded}}
}

// A dependent submit that InnoDB rolls back for a deadlock after it read
// its upstream task still running, and whose upstream task succeeds before
// the retry, is decided again by the retry: the new task is written
// pending (its edge settled), not blocked for ever with nothing left to
// release it (issue #22, break 3a). The hook fails the first try at its
// COMMIT with the server's deadlock error and finishes the upstream task
// before the second try begins.
func TestDependentSubmitRetriedAfterDeadlockDecidesAgain(t *testing.T) {
	for _, b := range testdb.ConformanceBackends(t) {
		if b.Name == "sqlite" {
			continue // SQLite never retries: writers queue on the file's write lock
		}
		t.Run(b.Name, func(t *testing.T) {
			s := openStore(t, b.FreshDSN(t), false)
			ctx := context.Background()
			up := claimedTask(t, s, "up", "w", 100)
			tries := 0
			hook := func(_ context.Context, try int, at storage.TxPoint) error {
				tries = max(tries, try)
				switch {
				case try == 1 && at == storage.TryCommit:
					return &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock (injected)"}
				case try == 2 && at == storage.TryBegin:
					errs, err := s.FinishBatchAsIs(ctx, []storage.Finishing{succeed(up, 200)}, 200)
					if err == nil {
						err = errs[0]
					}
					return err
				}
				return nil
			}
			down := []storage.DependentTask{{Task: depTask("down", 200), After: []int64{up.ID}}}
			if err := s.InsertDependent(storage.WithTxHook(ctx, hook), down, 200); err != nil {
				t.Fatal(err)
			}
			if tries != 2 {
				t.Fatalf("the submit ran %d tries, want 2 (the first rolled back)", tries)
			}
			d := down[0].Task
			row, err := s.Get(ctx, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			ups, err := s.Upstream(ctx, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			if row.State != storage.StatePending || d.State != storage.StatePending || len(ups) != 1 || ups[0].Outcome != storage.UpstreamSucceeded {
				t.Fatalf("task %d after its upstream task %d succeeded between the tries: stored %s, returned %s, edges %+v; want pending, pending, one settled edge",
					d.ID, up.ID, row.State, d.State, ups)
			}
		})
	}
}
