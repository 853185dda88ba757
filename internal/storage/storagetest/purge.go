package storagetest

import (
	"errors"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// purgeCases: the retention purge of finished tasks.
func purgeCases() []testCase {
	return []testCase{
		{"Bounded", purgeBounded},
		{"OnlyPurgeableStates", purgeOnlyPurgeable},
	}
}

// A purge deletes at most its limit of rows per call, with their history;
// calls until none is left delete every old finished row and nothing else.
func purgeBounded(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	var old []int64
	for range 25 {
		task := newTask("p", succeeded, 100, 0)
		insert(t, s, task)
		old = append(old, task.ID)
		if err := s.InsertAttempt(ctx, s.DB(), &storage.Attempt{TaskPK: task.ID, Attempt: 1, Kind: "attempt", Outcome: outcomeFailed, StartedAt: 1, FinishedAt: 2}); err != nil {
			t.Fatal(err)
		}
	}
	young := newTask("p", succeeded, 5000, 0)
	insert(t, s, young)
	if err := s.InsertAttempt(ctx, s.DB(), &storage.Attempt{TaskPK: young.ID, Attempt: 1, Kind: "attempt", Outcome: outcomeFailed}); err != nil {
		t.Fatal(err)
	}
	n, err := s.Purge(ctx, 1000, 10)
	if err != nil || n != 10 {
		t.Fatalf("purge = %d, %v; want 10 (the limit)", n, err)
	}
	if left := count(t, s, "SELECT COUNT(*) FROM argo_task"); left != 16 {
		t.Fatalf("%d rows after a purge of 10 of 26, want 16", left)
	}
	total := n
	for calls := 0; n > 0; calls++ {
		if calls > 5 {
			t.Fatal("purge still deleting after 5 more calls of 10 for 15 rows")
		}
		if n, err = s.Purge(ctx, 1000, 10); err != nil {
			t.Fatal(err)
		}
		if n > 10 {
			t.Fatalf("a purge of limit 10 deleted %d", n)
		}
		total += n
	}
	if total != 25 {
		t.Fatalf("purged %d, want 25", total)
	}
	for _, id := range old {
		if _, err := s.Get(ctx, id); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("old row %d not purged: %v", id, err)
		}
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task_attempt WHERE task_pk <> ?", young.ID); n != 0 {
		t.Fatalf("%d history rows of purged tasks left", n)
	}
	get(t, s, young.ID)
	if atts := attempts(t, s, young.ID); len(atts) != 1 {
		t.Fatalf("history of a kept task: %d rows, want 1", len(atts))
	}
}

// Only succeeded, recovered and discarded rows are purged; dead rows (kept
// for operators) and every unfinished row stay, however old.
func purgeOnlyPurgeable(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	kept := map[int64]storage.State{}
	var gone []int64
	for _, st := range []storage.State{pending, running, retrying, succeeded, exhausted, fallingBack, recovered, dead, discarded} {
		task := newTask("p", st, 100, 0)
		insert(t, s, task)
		switch st {
		case succeeded, recovered, discarded:
			gone = append(gone, task.ID)
		default:
			kept[task.ID] = st
		}
	}
	if n, err := s.Purge(ctx, 1000, 100); err != nil || n != len(gone) {
		t.Fatalf("purge = %d, %v; want %d", n, err, len(gone))
	}
	for id, st := range kept {
		if _, err := s.Get(ctx, id); err != nil {
			t.Fatalf("%s row purged: %v", st, err)
		}
	}
	for _, id := range gone {
		if _, err := s.Get(ctx, id); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("row %d not purged: %v", id, err)
		}
	}
}
