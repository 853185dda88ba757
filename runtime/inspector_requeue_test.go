package runtime

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestInspectorRequeueRecorded: the Go API records a requeue (when, who,
// why) in the task's history, refuses a finished task with a
// *FinishedError that still matches ErrTransitionInvalid, and matches
// names by their end (Filter.NameSuffix).
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

		if err := in.RequeueWithReason(ctx, dead.ID, "template fixed"); err != nil {
			t.Fatal(err)
		}
		atts, err := in.Attempts(ctx, dead.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := Attempt{TaskPK: dead.ID, Attempt: 4, Kind: AttemptKindRequeue, Worker: "ops-bot", StartedAt: toMillis(at), FinishedAt: toMillis(at), Outcome: OutcomeRequeued, Error: "template fixed"}
		if len(atts) != 1 {
			t.Fatalf("history: %+v, want one requeue row", atts)
		}
		got := atts[0]
		got.ID = 0
		if got != want {
			t.Fatalf("requeue row %+v, want %+v", got, want)
		}

		err = in.Requeue(ctx, done.ID)
		var fe *FinishedError
		if !errors.As(err, &fe) || !errors.Is(err, ErrTransitionInvalid) || fe.State != StateSucceeded {
			t.Fatalf("requeue of a succeeded task: %v", err)
		}
		if atts, _ := in.Attempts(ctx, done.ID); slices.ContainsFunc(atts, func(a Attempt) bool { return a.Kind == AttemptKindRequeue }) {
			t.Fatal("a refused requeue was recorded")
		}

		n, err := in.Count(ctx, Filter{NameSuffix: "Systems.PrintLabel"})
		if err != nil || n != 2 {
			t.Fatalf("Count(NameSuffix Systems.PrintLabel) = %d, %v; want 2", n, err)
		}
		n, err = in.Count(ctx, Filter{NameSuffix: "Label"})
		if err != nil || n != 0 {
			t.Fatalf("Count(NameSuffix Label) = %d, %v; want 0", n, err)
		}
	})
}
