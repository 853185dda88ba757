package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// TestInspectorRequeueRecorded: the Go API requeues a dead task as a new
// task linked to it and records the requeue (when, who, why) in the old
// task's operator trail, leaving its history as it was; it refuses a
// finished task with a *FinishedError that still matches
// ErrTransitionInvalid, and matches names by their end (Filter.NameSuffix).
func TestInspectorRequeueRecorded(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := freshStore(t, dsn)
		in := &Inspector{store: s, Operator: "ops-bot"}
		at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		in.Now = func() time.Time { return at }
		const name = "example.com/shop/integration.Systems.PrintLabel"
		dead, done := sampleTask(name, StateDead, 100, 0), sampleTask(name, StateSucceeded, 100, 0)
		dead.ExecuteTimes = 4
		mustInsert(t, s, dead, done)

		newID, err := in.RequeueAsNew(ctx, dead.ID, "template fixed")
		if err != nil {
			t.Fatal(err)
		}
		if atts, err := in.Attempts(ctx, dead.ID); err != nil || len(atts) != 0 {
			t.Fatalf("history of the requeued task: %+v, %v; want it as it was (empty)", atts, err)
		}
		if old, err := in.Get(ctx, dead.ID); err != nil || old.State != StateDead || old.ExecuteTimes != 4 {
			t.Fatalf("requeued task: %+v, %v; want it dead with its 4 attempts", old, err)
		}
		if l, err := in.Links(ctx, newID); err != nil || l.From != dead.ID {
			t.Fatalf("links of the new task: %+v, %v", l, err)
		}
		tr, err := in.Trail(ctx, dead.ID)
		if err != nil || len(tr) != 1 {
			t.Fatalf("trail: %+v, %v; want one requeue", tr, err)
		}
		want := OperatorAction{ID: tr[0].ID, TaskPK: dead.ID, Action: ActionRequeue, Operator: "ops-bot", Reason: "template fixed", At: toMillis(at), OtherTask: tr[0].OtherTask,
			DBAccount: dbAccount(t, s)}
		if tr[0] != want || tr[0].OtherTask.Int64 != newID {
			t.Fatalf("requeue record %+v, want %+v into %d", tr[0], want, newID)
		}
		if _, err := in.RequeueAsNew(ctx, dead.ID, ""); !errors.Is(err, ErrAlreadyRequeued) || !errors.Is(err, ErrTransitionInvalid) {
			t.Fatalf("second requeue: %v, want ErrAlreadyRequeued matching ErrTransitionInvalid", err)
		}

		err = in.Requeue(ctx, done.ID)
		var fe *FinishedError
		if !errors.As(err, &fe) || !errors.Is(err, ErrTransitionInvalid) || fe.State != StateSucceeded {
			t.Fatalf("requeue of a succeeded task: %v", err)
		}
		if tr, _ := in.Trail(ctx, done.ID); len(tr) != 0 {
			t.Fatal("a refused requeue was recorded")
		}

		n, err := in.Count(ctx, Filter{NameSuffix: "Systems.PrintLabel"})
		if err != nil || n != 3 { // the dead task, its new task, the succeeded one
			t.Fatalf("Count(NameSuffix Systems.PrintLabel) = %d, %v; want 3", n, err)
		}
		n, err = in.Count(ctx, Filter{NameSuffix: "Label"})
		if err != nil || n != 0 {
			t.Fatalf("Count(NameSuffix Label) = %d, %v; want 0", n, err)
		}
	})
}

// dbAccount is the database account s's connections run as (MySQL's
// CURRENT_USER()), "" on SQLite, which has none: what the operator trail
// records beside the operator's name (migration 000022).
func dbAccount(t *testing.T, s *storage.Store) string {
	t.Helper()
	if s.Dialect() != "mysql" {
		return ""
	}
	var account string
	if err := s.DB().QueryRowContext(context.Background(), "SELECT CURRENT_USER()").Scan(&account); err != nil {
		t.Fatal(err)
	}
	return account
}
