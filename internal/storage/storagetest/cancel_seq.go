package storagetest

import (
	"context"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// How a cancel reaches the instance running the attempt at its next
// heartbeat (migration 000018, storage/instance_cancel.go).

// beatSeen runs one heartbeat of instance id at now fenced on seen and
// fails the test unless it returns want.
func beatSeen(t *testing.T, s *storage.Store, id string, now Millis, seen, want int64) {
	t.Helper()
	got, err := s.RecordInstanceSeen(context.Background(), id, []string{"a"}, nil, now, seen)
	if err != nil || got != want {
		t.Fatalf("heartbeat of %s at %d fenced on cancel_seq %d = %d, %v; want %d", id, now, seen, got, err, want)
	}
}

// heartbeatAt reads instance id's heartbeat_at.
func heartbeatAt(t *testing.T, s *storage.Store, id string) int {
	t.Helper()
	return count(t, s, "SELECT heartbeat_at FROM argo_instance WHERE instance_id = ?", id)
}

// The cancel of a running task moves its lease owner's cancel_seq, in the
// cancel's transaction; the cancel of a waiting task, and a cancel whose
// fenced UPDATE missed the attempt it read, do not. The heartbeat fenced on
// the value it last saw reports the moved value and still records the
// beat; fenced on the current value it returns it unchanged; a missing row
// is inserted (cancel_seq 0), whatever the instance saw before. A running
// task whose owner has no row is cancelled all the same.
func cancelSeqHeartbeat(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	beatSeen(t, s, "w", 100, 0, 0) // inserted
	beatSeen(t, s, "w", 110, 0, 0) // steady: one UPDATE
	beatSeen(t, s, "w2", 110, 0, 0)
	if at := heartbeatAt(t, s, "w"); at != 110 {
		t.Fatalf("heartbeat_at %d, want 110", at)
	}

	run, wait := newTask("a", pending, 100, 0), newTask("a", pending, 100, 0)
	insert(t, s, run)
	claimOnly(t, s, 200, run.ID)
	insert(t, s, wait)
	if _, err := s.Cancel(ctx, wait.ID, "not needed", "op", 250); err != nil {
		t.Fatal(err)
	}
	beatSeen(t, s, "w", 260, 0, 0) // a waiting task's cancel tells no instance
	if _, err := s.Cancel(ctx, run.ID, "stop it", "op", 300); err != nil {
		t.Fatal(err)
	}
	beatSeen(t, s, "w2", 310, 0, 0) // another instance's count did not move
	beatSeen(t, s, "w", 320, 0, 1)  // moved: reported
	if at := heartbeatAt(t, s, "w"); at != 320 {
		t.Fatalf("heartbeat_at %d after the beat that saw the cancel, want 320 (the beat is recorded too)", at)
	}
	beatSeen(t, s, "w", 330, 1, 1)
	if at := heartbeatAt(t, s, "w"); at != 330 {
		t.Fatalf("heartbeat_at %d, want 330", at)
	}

	// The attempt the cancel read is reclaimed by w2 before its UPDATE: the
	// cancel lands on w2's attempt, and only w2's count moves.
	raced := newTask("a", pending, 100, 0)
	insert(t, s, raced)
	ca := claimOnly(t, s, 400, raced.ID)[0]
	done := false
	hook := func(ctx context.Context, try int, at storage.TxPoint) error {
		if !done && at == storage.TryBegin {
			done = true
			if err := s.Finish(context.Background(), failure(ca, retrying, 410, "flaky"), 410); err != nil {
				return err
			}
			if got, err := s.ClaimDue(context.Background(), "w2", 420, 60_000, 10, []string{"a"}, nil); err != nil || len(got) != 1 {
				t.Errorf("reclaim by w2: %d tasks, %v", len(got), err)
			}
		}
		return nil
	}
	if c, err := s.Cancel(storage.WithTxHook(ctx, hook), raced.ID, "stop", "op", 500); err != nil || c.Worker != "w2" {
		t.Fatalf("Cancel raced by a reclaim = %+v, %v; want w2's attempt", c, err)
	}
	beatSeen(t, s, "w", 510, 1, 1)  // the try fenced on w's attempt missed: undone
	beatSeen(t, s, "w2", 510, 0, 1) // w2's attempt was cancelled

	// An owner without a row: the cancel goes through, no row appears.
	orphan := leasedTask("a", running, 100, 0, "gone", 1, 90_000)
	insert(t, s, orphan)
	if _, err := s.Cancel(ctx, orphan.ID, "stop", "op", 600); err != nil {
		t.Fatalf("cancel of a task whose owner has no row: %v", err)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_instance WHERE instance_id = 'gone'"); n != 0 {
		t.Fatalf("%d rows for the owner without one, want 0", n)
	}

	// w's row removed (it stopped, or timed out): its next beat inserts it
	// afresh, and reports the new row's count.
	if err := s.RemoveInstance(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	beatSeen(t, s, "w", 700, 1, 0)
	if live, err := s.LiveInstances(ctx, 700); err != nil || len(live) != 1 || live[0].ID != "w" {
		t.Fatalf("LiveInstances(700) = %+v, %v; want w, inserted again", live, err)
	}
	if seq, found, err := s.InstanceCancelSeq(ctx, "w"); err != nil || !found || seq != 0 {
		t.Fatalf("InstanceCancelSeq(w) = %d, %v, %v; want 0 in the new row", seq, found, err)
	}
}

// The cancelled attempt's history row keeps the progress a renewal stored
// for that attempt before the cancel (as a finish keeps it); a row whose
// stored progress is an earlier attempt's keeps none.
func cancelKeepsProgress(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	a := leasedTask("p", running, 1, 0, "me", 2, 10_000)
	b := leasedTask("p", running, 1, 0, "me", 1, 10_000)
	insert(t, s, a, b)
	ka, kb := storage.LeaseKey{ID: a.ID, Attempt: 2}, storage.LeaseKey{ID: b.ID, Attempt: 1}
	prog := []storage.LeaseProgress{{Key: ka, Fraction: 0.5, Note: "half", At: 140}, {Key: kb, Fraction: 0.25, Note: "a quarter", At: 140}}
	if lost, _, err := s.RenewLeases(ctx, "me", []storage.LeaseKey{ka, kb}, prog, 20_000, 150); err != nil || len(lost) != 0 {
		t.Fatalf("renewal with progress: lost %v, %v", lost, err)
	}
	// b's attempt 1 fails and attempt 2 is claimed: its row's progress is attempt 1's.
	if _, err := dbx(s).Exec("UPDATE argo_task SET execute_times = 2 WHERE id = ?", b.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{a.ID, b.ID} {
		if _, err := s.Cancel(ctx, id, "stop", "op", 300); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		id   int64
		note string
		frac float64
		at   Millis
	}{{a.ID, "half", 0.5, 140}, {b.ID, "", 0, 0}} {
		var got *storage.Attempt
		for _, at := range attempts(t, s, c.id) {
			if at.Outcome == "cancelled" {
				got = &at
			}
		}
		if got == nil || got.ProgressNote != c.note || got.Progress != c.frac || got.ProgressAt != c.at {
			t.Fatalf("task %d: cancelled attempt %+v, want progress %v %q at %d", c.id, got, c.frac, c.note, c.at)
		}
	}
}
