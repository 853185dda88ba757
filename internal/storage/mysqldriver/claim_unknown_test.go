package mysqldriver_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
)

// bareCommit is a COMMIT sent on its own (COM_QUERY 0x03, then the text):
// the one-trip take's, a transaction's, the batched gated claim's. (The
// take's own query says READ COMMITTED, which this does not match.)
const bareCommit = "\x03COMMIT"

// A claim whose COMMIT committed but whose answer was lost, on each claim
// path: it returns no task (its take's outcome is unknown), remembers the
// rows it may have taken, and gives them back, attempt undone, once the
// database answers: a task with no retry left is claimed again as attempt
// 1, not charged a lease_expired attempt that never ran.
func TestClaimWhoseCommitAnswerIsLost(t *testing.T) {
	ctx := context.Background()
	paths := []struct {
		name    string
		onetrip bool
		cut     string
		claim   func(s *storage.Store, now storage.Millis) ([]*storage.Task, error)
	}{
		{"one-trip take", true, bareCommit, func(s *storage.Store, now storage.Millis) ([]*storage.Task, error) {
			return s.ClaimDue(ctx, "me", now, now+60_000, 10, []string{"lost.claim"}, nil)
		}},
		{"row-wise take", false, bareCommit, func(s *storage.Store, now storage.Millis) ([]*storage.Task, error) {
			return s.ClaimDue(ctx, "me", now, now+60_000, 10, []string{"lost.claim"}, nil)
		}},
		{"gated claim", false, bareCommit, func(s *storage.Store, now storage.Millis) ([]*storage.Task, error) {
			r, err := s.ClaimFlow(ctx, storage.FlowClaim{Group: "g", Names: []string{"lost.claim"}, Policy: storage.FlowPolicy{Limit: 5}, Owner: "me", Now: now, LeaseUntil: now + 60_000, Limit: 10})
			return r.Tasks, err
		}},
		{"batched gated claim", true, bareCommit, func(s *storage.Store, now storage.Millis) ([]*storage.Task, error) {
			r, err := s.ClaimFlow(ctx, storage.FlowClaim{Group: "g", Names: []string{"lost.claim"}, Policy: storage.FlowPolicy{Limit: 5}, Owner: "me", Now: now, LeaseUntil: now + 60_000, Limit: 10})
			return r.Tasks, err
		}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			dsn := testdb.MySQLDSN(t)
			proxy := testdb.NewFaultProxy(t, dsn)
			s := openStore(t, proxy.DSN(dsn), p.onetrip)
			if p.name == "batched gated claim" {
				// The group's row exists, as after its first claim (which
				// takes the ordinary path).
				if _, err := s.DB().ExecContext(ctx, "INSERT INTO argo_flow (group_name, members) VALUES ('g', '')"); err != nil {
					t.Fatal(err)
				}
			}
			now := storage.ToMillis(time.Now())
			var ids []int64
			for i := range 2 {
				task := &storage.Task{Name: "lost.claim", State: storage.StatePending, MaxAttempts: 1, ExecuteTime: now - 1000,
					Parameter: fmt.Sprintf(`{"i":%d}`, i), PerformanceWay: argotype.Immediate, ThreadWay: argotype.Async,
					RetryPolicyJSON: `{"max_attempts":1}`, GmtCreate: now - 1000, GmtModified: now - 1000}
				if err := s.Insert(ctx, nil, task); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, task.ID)
			}
			proxy.CutAnswer(bareCommit, 1)
			tasks, err := p.claim(s, now)
			if proxy.Cuts() != 1 {
				t.Fatalf("the proxy lost %d answers, want 1 (the claim's COMMIT)", proxy.Cuts())
			}
			var cu *storage.ClaimUnknownError
			if len(tasks) != 0 || !errors.As(err, &cu) || len(cu.Rows) != 2 || s.PendingClaims() != 2 {
				t.Fatalf("claim whose COMMIT's answer was lost: %d tasks, %v, %d rows remembered; want none, a ClaimUnknownError naming both rows", len(tasks), err, s.PendingClaims())
			}
			for _, id := range ids {
				if got, err := s.Get(ctx, id); err != nil || got.State != storage.StateRunning || got.ExecuteTimes != 1 || got.LeaseOwner != "me" {
					t.Fatalf("row %d after the lost answer: %+v, %v; want running, attempt 1, leased by me (the COMMIT landed)", id, got, err)
				}
			}
			gave, err := s.GiveBackPendingClaims(ctx, now+5)
			if err != nil || gave != 2 || s.PendingClaims() != 0 {
				t.Fatalf("give-back: %d rows, %v, %d left; want 2, nil, 0", gave, err, s.PendingClaims())
			}
			for _, id := range ids {
				got, err := s.Get(ctx, id)
				if err != nil || got.State != storage.StatePending || got.ExecuteTimes != 0 || got.LeaseOwner != "" || got.LeaseUntil != 0 {
					t.Fatalf("row %d given back: %+v, %v; want pending, attempt 0, no lease", id, got, err)
				}
			}
			// Claimed again: attempt 1, as if the lost claim had not been.
			tasks, err = p.claim(s, now+10)
			if err != nil || len(tasks) != 2 || tasks[0].ExecuteTimes != 1 || tasks[1].ExecuteTimes != 1 {
				t.Fatalf("claim after the give-back: %d tasks, %v; want both, attempt 1", len(tasks), err)
			}
			// A second give-back of the same rows changes nothing.
			if gave, _, err := s.GiveBackUnclaimed(ctx, cu.Rows, now+20); err != nil || gave != 0 {
				t.Fatalf("give-back of rows claimed again since: %d, %v; want 0 (fenced)", gave, err)
			}
		})
	}
}
