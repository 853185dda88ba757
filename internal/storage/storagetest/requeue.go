package storagetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// requeueCases: an operator's requeue of a dead or discarded task writes a
// new task linked to the old one (migration 000005).
func requeueCases() []testCase {
	return []testCase{
		{"NewTaskOldRowKept", requeueNewTask},
		{"Refused", requeueRefused},
		{"UniqueKeyMovesOnce", requeueMovesUniqueKey},
		{"RacingRequeuesMakeOneTask", requeueRacing},
		{"PurgeAfterTheNewTask", requeuePurge},
		{"PurgeSparesRequeuedSinceSelection", requeuePurgeRace},
	}
}

// trail reads task id's operator trail or fails the test.
func trail(t *testing.T, s *storage.Store, id int64) []storage.OperatorAction {
	t.Helper()
	as, err := s.OperatorActions(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

// links reads task id's requeue links or fails the test.
func links(t *testing.T, s *storage.Store, id int64) storage.RequeueLinks {
	t.Helper()
	l, err := s.Links(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A requeue writes a new task with the old one's call, pending, due now,
// no attempts, no error texts, linked both ways; the old row is as it was
// but for its link, its history too; the trail records who, when, why and
// the new task. A discarded task requeues the same way.
func requeueNewTask(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	old := newTask("q", dead, 100, 3)
	old.ExecuteTimes, old.ErrorMsg, old.FallbackErrorMsg = 4, "boom", "fallback failed"
	old.AlertExpression, old.FallbackClassName, old.MethodName = "true", "pkg.Fallback", "pkg.Call"
	discardedRow := newTask("q", discarded, 100, 0)
	discardedRow.DiscardReason = "by mistake"
	insert(t, s, old, discardedRow)
	if err := s.InsertAttempt(ctx, s.DB(), &storage.Attempt{TaskPK: old.ID, Attempt: 4, Kind: "attempt", Worker: "w", StartedAt: 90, FinishedAt: 95, Outcome: outcomeFailed, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	before, histBefore := get(t, s, old.ID), attempts(t, s, old.ID)
	if n, err := s.CountDeadLetters(ctx); err != nil || n != 1 {
		t.Fatalf("dead letters before the requeue: %d, %v; want 1", n, err)
	}
	if st, err := s.Stats(ctx, time.UnixMilli(1000), time.Hour); err != nil || st.Dead != 1 {
		t.Fatalf("stats before the requeue: %+v, %v; want one dead task finished", st, err)
	}

	newID, err := s.RequeueAsNew(ctx, old.ID, "template fixed", "ops-bot", 500)
	if err != nil {
		t.Fatal(err)
	}
	if newID == old.ID || newID == 0 {
		t.Fatalf("requeue returned task %d for task %d, want a new id", newID, old.ID)
	}
	if after := get(t, s, old.ID); *after != *before {
		t.Fatalf("the requeued row changed:\n%+v\nwas\n%+v", after, before)
	}
	if h := attempts(t, s, old.ID); !slices.Equal(h, histBefore) {
		t.Fatalf("the requeued row's history changed: %+v, was %+v", h, histBefore)
	}
	if l := links(t, s, old.ID); l != (storage.RequeueLinks{To: newID}) {
		t.Fatalf("old row's links %+v, want requeued_to %d only", l, newID)
	}
	fresh := get(t, s, newID)
	want := *before
	want.ID, want.State, want.ExecuteTimes, want.ExecuteTime = newID, pending, 0, 500
	want.ErrorMsg, want.FallbackErrorMsg, want.GmtCreate, want.GmtModified = "", "", 500, 500
	if *fresh != want {
		t.Fatalf("new row\n%+v\nwant\n%+v", *fresh, want)
	}
	if l := links(t, s, newID); l != (storage.RequeueLinks{From: old.ID}) {
		t.Fatalf("new row's links %+v, want requeued_from %d only", l, old.ID)
	}
	if h := attempts(t, s, newID); len(h) != 0 {
		t.Fatalf("new task's history %+v, want none", h)
	}
	tr := trail(t, s, old.ID)
	if len(tr) != 1 || tr[0].Action != storage.ActionRequeue || tr[0].Operator != "ops-bot" || tr[0].Reason != "template fixed" || tr[0].At != 500 || tr[0].OtherTask.Int64 != newID || tr[0].TaskPK != old.ID {
		t.Fatalf("trail %+v, want one requeue by ops-bot into %d", tr, newID)
	}

	if n, err := s.CountDeadLetters(ctx); err != nil || n != 0 {
		t.Fatalf("dead letters after the requeue of the only dead task: %d, %v; want 0", n, err)
	}
	// Stats' dead rate counts dead tasks still awaiting an operator, as
	// before migration 000005 (a requeue moved the row out of dead then).
	if st, err := s.Stats(ctx, time.UnixMilli(1000), time.Hour); err != nil || st.Dead != 0 || st.ByState[dead] != 1 {
		t.Fatalf("stats after the requeue: %+v, %v; want no dead task finished, one dead row", st, err)
	}
	id2, err := s.RequeueAsNew(ctx, discardedRow.ID, "", "ops-bot", 600)
	if err != nil {
		t.Fatal(err)
	}
	if row := get(t, s, discardedRow.ID); row.State != discarded || row.DiscardReason != "by mistake" {
		t.Fatalf("requeued discarded row %s %q, want it discarded as it was", row.State, row.DiscardReason)
	}
	if row := get(t, s, id2); row.State != pending || row.DiscardReason != "" {
		t.Fatalf("task requeued from a discarded one: %s %q", row.State, row.DiscardReason)
	}
}

// Only a dead or discarded task not requeued before is requeued: the rest
// are refused with nothing written (no new row, no trail); an unknown id is
// ErrNotFound.
func requeueRefused(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	var rows []*storage.Task
	for _, st := range []storage.State{pending, retrying, succeeded, exhausted, recovered} {
		rows = append(rows, newTask("q", st, 100, 0))
	}
	rows = append(rows, leasedTask("q", running, 100, 0, "w", 1, 9000))
	insert(t, s, rows...)
	for _, row := range rows {
		_, err := s.RequeueAsNew(ctx, row.ID, "no", "ops-bot", 700)
		wantTransitionInvalid(t, "requeue of a "+row.State.String()+" task", err)
		if after := get(t, s, row.ID); *after != *row {
			t.Fatalf("a refused requeue changed the %s row: %+v", row.State, after)
		}
		if tr := trail(t, s, row.ID); len(tr) != 0 {
			t.Fatalf("a refused requeue was recorded: %+v", tr)
		}
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task"); n != len(rows) {
		t.Fatalf("%d rows after refused requeues of %d, want no new row", n, len(rows))
	}
	if _, err := s.RequeueAsNew(ctx, slices.Max(idsOf(rows))+1000, "", "ops-bot", 700); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("requeue of an unknown id: %v, want ErrNotFound", err)
	}
}

// The unique key of a requeued task moves to its new task in the requeue's
// transaction: a submit with the key then finds the new task; the old row
// keeps its history. A second requeue of the old row is refused
// (ErrAlreadyRequeued), so the key moves exactly once; the new task can be
// requeued in its turn, and the key follows.
func requeueMovesUniqueKey(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	old := newTask("k", dead, 100, 0)
	old.UniqueKey = nullKey("order-7")
	other := newTask("k", dead, 100, 0)
	other.UniqueKey = nullKey("order-8")
	insert(t, s, old, other)
	newID, err := s.RequeueAsNew(ctx, old.ID, "", "ops", 200)
	if err != nil {
		t.Fatal(err)
	}
	if k := get(t, s, newID).UniqueKey; k != nullKey("order-7") {
		t.Fatalf("new task's key %+v, want order-7", k)
	}
	if k := get(t, s, old.ID).UniqueKey; k.Valid {
		t.Fatalf("old row still holds key %q", k.String)
	}
	dup := newTask("k", pending, 300, 0)
	dup.UniqueKey = nullKey("order-7")
	if err := s.Insert(ctx, nil, dup); !errors.Is(err, storage.ErrDuplicate) || dup.ID != newID {
		t.Fatalf("submit with the moved key: %v (id %d), want ErrDuplicate naming task %d", err, dup.ID, newID)
	}
	_, err = s.RequeueAsNew(ctx, old.ID, "again", "ops", 300)
	if !errors.Is(err, storage.ErrAlreadyRequeued) {
		t.Fatalf("second requeue of task %d: %v, want ErrAlreadyRequeued", old.ID, err)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task"); n != 3 {
		t.Fatalf("%d rows after a refused second requeue, want 3", n)
	}
	if k := get(t, s, newID).UniqueKey; k != nullKey("order-7") {
		t.Fatalf("a refused requeue moved the key: %+v", k)
	}
	if tr := trail(t, s, old.ID); len(tr) != 1 {
		t.Fatalf("trail after a refused second requeue: %+v, want the first only", tr)
	}
	if k := get(t, s, other.ID).UniqueKey; k != nullKey("order-8") {
		t.Fatalf("another task's key changed: %+v", k)
	}
	// The new task dies and is requeued: the key follows it.
	exec(t, s, "UPDATE argo_task SET task_status = ? WHERE id = ?", dead, newID)
	third, err := s.RequeueAsNew(ctx, newID, "", "ops", 400)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task WHERE unique_key IS NOT NULL AND id = ?", third); n != 1 {
		t.Fatal("the key did not follow the second requeue")
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task WHERE unique_key IS NOT NULL"); n != 2 {
		t.Fatalf("%d rows hold a key, want 2 (order-7 on the newest task, order-8)", n)
	}
}

// Requeues of one task racing from several connections make exactly one new
// task; the others are refused with ErrAlreadyRequeued.
func requeueRacing(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	old := newTask("r", dead, 100, 0)
	old.UniqueKey = nullKey("once")
	insert(t, s, old)
	const racers = 4
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.RequeueAsNew(ctx, old.ID, "", "ops", 200)
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, storage.ErrAlreadyRequeued):
			t.Fatalf("a racing requeue: %v, want success or ErrAlreadyRequeued", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d racing requeues succeeded, want 1", won)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task"); n != 2 {
		t.Fatalf("%d rows after racing requeues, want 2", n)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_operator_action"); n != 1 {
		t.Fatalf("%d trail records after racing requeues, want 1", n)
	}
}

// A requeued task (dead or discarded) is kept while the task it was
// requeued into may still run, and purged, with its history and trail, once
// that one is gone or purgeable itself: a chain is deleted from its newest
// end back.
func requeuePurge(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	a, d := newTask("c", dead, 100, 0), newTask("c", discarded, 100, 0)
	insert(t, s, a, d)
	if err := s.InsertAttempt(ctx, s.DB(), &storage.Attempt{TaskPK: a.ID, Attempt: 1, Kind: "attempt", Outcome: outcomeFailed, StartedAt: 1, FinishedAt: 2}); err != nil {
		t.Fatal(err)
	}
	b, err := s.RequeueAsNew(ctx, a.ID, "", "ops", 200)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RequeueAsNew(ctx, d.ID, "", "ops", 200); err != nil {
		t.Fatal(err)
	}
	// a, the discarded d and their new tasks are all old enough; the new
	// ones may still run, so nothing goes.
	if n, err := s.Purge(ctx, 10_000, 100); err != nil || n != 0 {
		t.Fatalf("purge while the new tasks wait = %d, %v; want 0", n, err)
	}
	// b dies and is requeued as c; c succeeds.
	exec(t, s, "UPDATE argo_task SET task_status = ? WHERE id = ?", dead, b)
	c, err := s.RequeueAsNew(ctx, b, "", "ops", 300)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.Purge(ctx, 10_000, 100); err != nil || n != 0 {
		t.Fatalf("purge while the newest task waits = %d, %v; want 0", n, err)
	}
	exec(t, s, "UPDATE argo_task SET task_status = ? WHERE id = ?", succeeded, c)
	total := 0
	for calls := 0; ; calls++ {
		if calls > 4 {
			t.Fatal("purge still deleting after 4 calls")
		}
		n, err := s.Purge(ctx, 10_000, 100)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		total += n
	}
	if total != 3 {
		t.Fatalf("purged %d rows of the chain, want 3 (a, b, c)", total)
	}
	for _, id := range []int64{a.ID, b, c} {
		if _, err := s.Get(ctx, id); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("task %d of the finished chain not purged: %v", id, err)
		}
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_operator_action WHERE task_pk IN (?, ?)", a.ID, b); n != 0 {
		t.Fatalf("%d trail records of purged tasks left", n)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task_attempt WHERE task_pk = ?", a.ID); n != 0 {
		t.Fatalf("%d history rows of a purged task left", n)
	}
	if get(t, s, d.ID).State != discarded {
		t.Fatal("the requeued discarded task, whose new task waits, was changed")
	}
}

// A discarded task requeued between the purge's selection and its delete
// keeps its row and its history: the rows to delete are read again inside
// the deleting transaction.
func requeuePurgeRace(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	gone, back := newTask("p", discarded, 100, 0), newTask("p", discarded, 100, 0)
	insert(t, s, gone, back)
	for _, task := range []*storage.Task{gone, back} {
		if err := s.InsertAttempt(ctx, s.DB(), &storage.Attempt{TaskPK: task.ID, Attempt: 1, Kind: "attempt", Outcome: outcomeFailed}); err != nil {
			t.Fatal(err)
		}
	}
	newID, err := s.RequeueAsNew(ctx, back.ID, "", "ops", 500)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.PurgeIDs(ctx, []storage.RowKey{storage.KeyOf(gone), storage.KeyOf(back)}, 1000) // both were selected before the requeue
	if err != nil || n != 1 {
		t.Fatalf("PurgeIDs = %d, %v; want 1", n, err)
	}
	if _, err := s.Get(ctx, gone.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("purged task still there: %v", err)
	}
	if atts := attempts(t, s, back.ID); len(atts) != 1 {
		t.Fatalf("requeued task's history: %d rows, want 1", len(atts))
	}
	if get(t, s, newID).State != pending {
		t.Fatal("the new task is not pending")
	}
}
