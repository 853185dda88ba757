package storagetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
)

// transitionCases: each transition recorded (issue #26, seed 001 §6;
// migration 000024): the history row a finish writes carries the move the
// finish made (from → to) and the attempt span's trace id, on every path
// that writes one (a finish, a batch, a rescue, a cancel); a plain success
// still writes no row, its move read from the task row.
func transitionCases() []testCase {
	return []testCase{
		{"FinishRecordsMove", transitionsFinishRecordsMove},
		{"BatchRescueCancel", transitionsBatchRescueCancel},
		{"SuccessWritesNoRow", transitionsSuccessWritesNoRow},
		{"BadTraceIDNotStored", transitionsBadTraceIDNotStored},
		{"UnnamedMoveUnrecorded", transitionsUnnamedMoveUnrecorded},
	}
}

// traced is failure with the attempt span's trace id.
func traced(c *storage.Task, to storage.State, due Millis, text, trace string) storage.Finishing {
	f := failure(c, to, due, text)
	f.History.TraceID = trace
	return f
}

// moves renders the moves and trace ids of a task's history, oldest first.
func moves(t *testing.T, s *storage.Store, id int64) []string {
	t.Helper()
	var out []string
	for _, a := range attempts(t, s, id) {
		out = append(out, fmt.Sprintf("%s#%d %s %s->%s %s", a.Kind, a.Attempt, a.Outcome, a.From, a.To, a.TraceID))
	}
	return out
}

const (
	trace1 = "0af7651916cd43dd8448eb211c80319c"
	trace2 = "4bf92f3577b34da6a3ce929d0e0e4736"
	trace3 = "00f067aa0ba902b7a3ce929d0e0e4736"
)

// An attempt's failure records running → retrying, the last one running →
// exhausted, the fallback falling_back → dead, each with its trace id; the
// chain is a path of the state machine.
func transitionsFinishRecordsMove(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	task := newTask("moves", pending, 2, 0)
	insert(t, s, task)
	if err := s.Finish(ctx, traced(claimByID(t, s, task.ID, "w", 10, 100), retrying, 20, "boom", trace1), 20); err != nil {
		t.Fatal(err)
	}
	c, err := s.ClaimByID(ctx, task.ID, task.ShardKey, retrying, "w", 30, 130)
	if err != nil || c == nil {
		t.Fatalf("claim again: %v, %v", c, err)
	}
	if err := s.Finish(ctx, traced(c, exhausted, 40, "boom again", trace2), 40); err != nil {
		t.Fatal(err)
	}
	fb, err := s.ClaimByID(ctx, task.ID, task.ShardKey, exhausted, "w", 50, 150)
	if err != nil || fb == nil {
		t.Fatalf("claim of the fallback: %v, %v", fb, err)
	}
	text := "fallback failed"
	f := storage.Finishing{Fence: fenceOf(fb), To: dead, Due: 60, FallbackErr: &text,
		History: &storage.Attempt{TaskPK: task.ID, Attempt: fb.ExecuteTimes, Kind: "fallback", Worker: "w", StartedAt: 50, FinishedAt: 60, Outcome: outcomeFailed, Error: text, TraceID: trace3}}
	if err := s.Finish(ctx, f, 60); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"attempt#1 failed running->retrying " + trace1,
		"attempt#2 failed running->exhausted " + trace2,
		"fallback#2 failed falling_back->dead " + trace3,
	}
	if got := moves(t, s, task.ID); !slices.Equal(got, want) {
		t.Fatalf("recorded moves:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, a := range attempts(t, s, task.ID) {
		if !argotype.CanTransition(a.From, a.To) {
			t.Fatalf("recorded move %s -> %s is not a move of the state machine", a.From, a.To)
		}
	}
}

// The batched finish (one multi-row INSERT; on MySQL one round trip), a
// rescue of an expired lease and a cancel of a running attempt record
// their moves too.
func transitionsBatchRescueCancel(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	a, b, r, k := newTask("mv", pending, 3, 0), newTask("mv", pending, 3, 0), newTask("mv", pending, 3, 0), newTask("mv", pending, 3, 0)
	insert(t, s, a, b, r, k)
	fs := []storage.Finishing{
		traced(claimByID(t, s, a.ID, "w", 10, 100), retrying, 20, "a", trace1),
		traced(claimByID(t, s, b.ID, "w", 10, 100), exhausted, 20, "b", ""),
	}
	errs, err := s.FinishBatch(ctx, fs, 20)
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("batch: %v %v", errs, err)
	}
	rc := claimByID(t, s, r.ID, "w", 10, 100)
	rf := traced(rc, retrying, 250, "lease expired", "")
	rf.History.Outcome = outcomeLeaseExpired
	if err := s.Rescue(ctx, rf, rc.LeaseUntil, 200); err != nil {
		t.Fatalf("rescue: %v", err)
	}
	claimByID(t, s, k.ID, "w", 10, 100)
	if _, err := s.Cancel(ctx, k.ID, "not needed", "op", 50); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	for id, want := range map[int64]string{
		a.ID: "attempt#1 failed running->retrying " + trace1,
		b.ID: "attempt#1 failed running->exhausted ",
		r.ID: "attempt#1 lease_expired running->retrying ",
		k.ID: "attempt#1 cancelled running->discarded ",
	} {
		if got := moves(t, s, id); !slices.Equal(got, []string{want}) {
			t.Fatalf("task %d: recorded %q, want %q", id, got, want)
		}
	}
}

// A plain success writes no history row (the cost of a success does not
// move); its move, running → succeeded, is read from the task row.
func transitionsSuccessWritesNoRow(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	task := newTask("ok", pending, 3, 0)
	insert(t, s, task)
	if err := s.Finish(ctx, success(claimByID(t, s, task.ID, "w", 10, 100)), 20); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task_attempt WHERE task_pk = ?", task.ID); n != 0 {
		t.Fatalf("a plain success wrote %d history rows, want none", n)
	}
	if got, want := moves(t, s, task.ID), []string{"attempt#1 succeeded running->succeeded "}; !slices.Equal(got, want) {
		t.Fatalf("history %q, want %q", got, want)
	}
}

// A trace id that is not 1 to 32 lower-case hex digits (a tracer's bug)
// is not stored, and the finish is not refused (a VARCHAR(32) ASCII column
// would refuse it on MySQL and cost the attempt's outcome).
func transitionsBadTraceIDNotStored(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	for _, id := range []string{strings.Repeat("a", storage.MaxTraceIDBytes+1), "0AF7651916CD43DD", "trace-ä", "ab\x00cd", "ab cd"} {
		task := newTask("trace-bad", pending, 3, 0)
		insert(t, s, task)
		if err := s.Finish(ctx, traced(claimByID(t, s, task.ID, "w", 10, 100), retrying, 20, "boom", id), 20); err != nil {
			t.Fatalf("trace id %q: finish refused: %v", id, err)
		}
		if got, want := moves(t, s, task.ID), []string{"attempt#1 failed running->retrying "}; !slices.Equal(got, want) {
			t.Fatalf("trace id %q: history %q, want %q", id, got, want)
		}
	}
}

// A row written through InsertAttempt without a move (the zero pair,
// pending → pending, no move of the state machine) reads back unrecorded,
// as rows written before migration 000024 do.
func transitionsUnnamedMoveUnrecorded(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	task := newTask("old", pending, 3, 0)
	insert(t, s, task)
	if err := s.InsertAttempt(ctx, s.DB(), &storage.Attempt{TaskPK: task.ID, Attempt: 1, Kind: "attempt", Outcome: outcomeFailed, StartedAt: 1, FinishedAt: 2}); err != nil {
		t.Fatal(err)
	}
	atts := attempts(t, s, task.ID)
	if len(atts) != 1 || atts[0].From != storage.StateUnrecorded || atts[0].To != storage.StateUnrecorded {
		t.Fatalf("history %+v, want one row with its move unrecorded (-1, -1)", atts)
	}
}
