package storage_test

import (
	"context"
	"slices"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/runtime"
)

// openStore opens a migrated database of the backend as a Store.
func openStore(t *testing.T, dsn string) *storage.Store {
	t.Helper()
	db, dialect, err := runtime.OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := storage.Migrate(context.Background(), db, dialect); err != nil {
		t.Fatal(err)
	}
	s := storage.New(db, dialect, storage.Options{})
	t.Cleanup(s.Close)
	return s
}

// claimOne inserts a pending task due at 100 and claims it for owner.
func claimOne(t *testing.T, s *storage.Store, owner string) *storage.Task {
	t.Helper()
	ctx := context.Background()
	task := &storage.Task{Name: "fence", State: storage.StatePending, MaxAttempts: 3, ExecuteTime: 100, Parameter: "{}", RetryPolicyJSON: "{}", GmtCreate: 100, GmtModified: 100}
	if err := s.Insert(ctx, nil, task); err != nil {
		t.Fatal(err)
	}
	got, err := s.ClaimDue(ctx, owner, 100, 1000, 10, []string{"fence"}, nil)
	if err != nil || len(got) != 1 || got[0].ID != task.ID || got[0].State != storage.StateRunning {
		t.Fatalf("claim: %v, %v", got, err)
	}
	return got[0]
}

// TestRenewalFence checks that a lease is renewed only for its owner, its
// attempt, and while the row is leased: a renewal racing the attempt's own
// finish into a held retry (same owner, same attempt) must not move the
// hold, which the held retry's start is fenced on.
func TestRenewalFence(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			fresh := func(t *testing.T) *storage.Store {
				if b.Name == "mysql" {
					return openStore(t, testdb.MySQLDSN(t))
				}
				return openStore(t, testdb.SQLiteDSN(t))
			}
			check := func(t *testing.T, s *storage.Store, owner string, key storage.LeaseKey, wantUntil storage.Millis, wantState storage.State) {
				t.Helper()
				lost, err := s.ExtendLeases(ctx, owner, []storage.LeaseKey{key}, 9000, 150)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(lost, []storage.LeaseKey{key}) {
					t.Fatalf("renewal by %q of %+v: lost %v, want the lease reported lost", owner, key, lost)
				}
				row, err := s.Get(ctx, key.ID)
				if err != nil {
					t.Fatal(err)
				}
				if row.LeaseUntil != wantUntil || row.State != wantState {
					t.Fatalf("after a refused renewal: %s until %d, want %s until %d", row.State, row.LeaseUntil, wantState, wantUntil)
				}
			}
			t.Run("another owner", func(t *testing.T) {
				s := fresh(t)
				task := claimOne(t, s, "w")
				check(t, s, "x", storage.LeaseKey{ID: task.ID, Attempt: task.ExecuteTimes}, 1000, storage.StateRunning)
			})
			t.Run("another attempt", func(t *testing.T) {
				s := fresh(t)
				task := claimOne(t, s, "w")
				check(t, s, "w", storage.LeaseKey{ID: task.ID, Attempt: task.ExecuteTimes - 1}, 1000, storage.StateRunning)
			})
			t.Run("held retry", func(t *testing.T) {
				s := fresh(t)
				task := claimOne(t, s, "w")
				msg := "failed"
				f := storage.Finishing{
					Fence: storage.Fence{ID: task.ID, Shard: task.ShardKey, Owner: "w", Attempt: task.ExecuteTimes, From: storage.StateRunning},
					To:    storage.StateRetrying, Due: 200, ErrMsg: &msg, HoldUntil: 5000,
					History: &storage.Attempt{TaskPK: task.ID, Attempt: task.ExecuteTimes, Kind: "attempt", Worker: "w", StartedAt: 100, FinishedAt: 140, Outcome: "failed", Error: msg},
				}
				if err := s.Finish(ctx, f, 140); err != nil {
					t.Fatal(err)
				}
				check(t, s, "w", storage.LeaseKey{ID: task.ID, Attempt: task.ExecuteTimes}, 5000, storage.StateRetrying)
			})
		})
	}
}
