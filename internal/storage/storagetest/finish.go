package storagetest

import (
	"errors"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// finishCases: the fenced end of an attempt, alone and in batches.
func finishCases() []testCase {
	var cases []testCase
	for _, p := range writePaths {
		cases = append(cases,
			testCase{"Fenced/" + p.name, func(t *testing.T, e Engine) { finishFenced(t, e, p.finish) }},
			testCase{"FailedWritesNothing/" + p.name, func(t *testing.T, e Engine) { finishFailedWritesNothing(t, e, p.finish) }},
		)
	}
	return append(cases,
		testCase{"BatchEachFinishItsOwnFate", finishBatchMixed},
		testCase{"SuccessRecordedOnTaskRow", finishSuccessOnTaskRow},
		testCase{"UndoAttempt", finishUndoAttempt},
		testCase{"Landed", finishLanded},
	)
}

// A finish writes only while its lease holds: a finish by another owner,
// for a stale attempt, of the wrong shard or from the wrong state is
// refused with ErrLeaseLost and writes nothing (no history row); the
// holder's finish lands once, a second one is refused, and a finished task
// refuses any further transition.
func finishFenced(t *testing.T, e Engine, finish finishFunc) {
	s := e.Open(t)
	ctx := ctxFor(t)
	task := newTask("f", pending, 1, 4)
	insert(t, s, task)
	c := claimByID(t, s, task.ID, "owner", 10, 1000)
	for name, f := range map[string]storage.Fence{
		"other owner":   {ID: c.ID, Shard: 4, Owner: "thief", Attempt: 1, From: running},
		"stale attempt": {ID: c.ID, Shard: 4, Owner: "owner", Attempt: 0, From: running},
		"next attempt":  {ID: c.ID, Shard: 4, Owner: "owner", Attempt: 2, From: running},
		"wrong shard":   {ID: c.ID, Shard: 5, Owner: "owner", Attempt: 1, From: running},
		"wrong state":   {ID: c.ID, Shard: 4, Owner: "owner", Attempt: 1, From: fallingBack},
	} {
		bad := failure(c, retrying, 50, "boom")
		bad.Fence = f
		bad.History.Worker = f.Owner
		if f.From == fallingBack {
			bad.To = dead
		}
		wantLeaseLost(t, name, finish(ctx, s, bad, 20))
	}
	if atts := attempts(t, s, c.ID); len(atts) != 0 {
		t.Fatalf("fenced-out finishes wrote history %+v", atts)
	}
	if row := get(t, s, c.ID); *row != *c {
		t.Fatalf("fenced-out finishes changed the row:\n got %+v\nwant %+v", row, c)
	}
	f := failure(c, retrying, 50, "boom")
	if err := finish(ctx, s, f, 20); err != nil {
		t.Fatal(err)
	}
	wantLeaseLost(t, "the same finish again", finish(ctx, s, f, 21))
	wantTransitionInvalid(t, "retrying → succeeded", finish(ctx, s, storage.Finishing{Fence: storage.Fence{ID: c.ID, Shard: 4, Owner: "owner", Attempt: 1, From: retrying}, To: succeeded}, 22))
	wantTransitionInvalid(t, "succeeded → retrying", finish(ctx, s, storage.Finishing{Fence: storage.Fence{ID: c.ID, Shard: 4, Owner: "owner", Attempt: 1, From: succeeded}, To: retrying}, 22))
	atts := attempts(t, s, c.ID)
	if len(atts) != 1 || atts[0].Outcome != outcomeFailed || atts[0].Worker != "owner" || atts[0].Error != "boom" {
		t.Fatalf("history %+v, want exactly the one failed attempt", atts)
	}
	row := get(t, s, c.ID)
	if row.State != retrying || row.LeaseOwner != "" || row.LeaseUntil != 0 || row.ExecuteTime != 50 || row.ErrorMsg != "boom" || row.ExecuteTimes != 1 || row.GmtModified != 20 {
		t.Fatalf("task after its finish: %+v", row)
	}
}

// A finish whose history row cannot be written changes nothing (the task
// row keeps its lease), leaves no transaction open on a pooled connection,
// and the same finish lands once the history can be written.
func finishFailedWritesNothing(t *testing.T, e Engine, finish finishFunc) {
	s := e.Open(t)
	ctx := ctxFor(t)
	task := newTask("f", pending, 1, 4)
	insert(t, s, task)
	c := claimByID(t, s, task.ID, "owner", 10, 1000)
	exec(t, s, "ALTER TABLE argo_task_attempt RENAME TO argo_task_attempt_away")
	if err := finish(ctx, s, failure(c, retrying, 50, "boom"), 20); err == nil || errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("finish without a history table: %v, want its error", err)
	}
	for i := range 20 { // every pooled connection sees the row unchanged
		if row, err := s.Get(ctx, c.ID); err != nil || *row != *c {
			t.Fatalf("read %d after the failed finish: %+v, %v; want the row as claimed %+v", i, row, err, c)
		}
	}
	exec(t, s, "ALTER TABLE argo_task_attempt_away RENAME TO argo_task_attempt")
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task_attempt"); n != 0 {
		t.Fatalf("%d history rows after the failed finish", n)
	}
	if err := finish(ctx, s, failure(c, retrying, 50, "boom"), 21); err != nil {
		t.Fatalf("finish after a failed one: %v", err)
	}
	if atts := attempts(t, s, c.ID); len(atts) != 1 {
		t.Fatalf("history %+v, want one row", atts)
	}
}

// In a batch each finish has its own fate: only those whose fence holds
// change their rows and write history; a refused transition and a lost
// lease do not stop the others.
func finishBatchMixed(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	for range 5 {
		insert(t, s, newTask("m", pending, 1, 0))
	}
	got, err := s.ClaimDue(ctx, "me", 10, 1000, 5, []string{"m"}, nil)
	if err != nil || len(got) != 5 {
		t.Fatalf("claim: %d, %v", len(got), err)
	}
	stolen := failure(got[1], retrying, 50, "boom")
	stolen.Owner, stolen.History.Worker = "thief", "thief"
	errs, err := s.FinishBatch(ctx, []storage.Finishing{
		failure(got[0], retrying, 50, "boom"),
		stolen,
		failure(got[2], recovered, 50, "boom"), // running → recovered is no transition
		success(got[3]),
		failure(got[4], exhausted, 50, "last"),
	}, 30)
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || !errors.Is(errs[1], storage.ErrLeaseLost) || errs[3] != nil || errs[4] != nil {
		t.Fatalf("errs %v, want [nil, lease lost, transition invalid, nil, nil]", errs)
	}
	wantTransitionInvalid(t, "batch finish running → recovered", errs[2])
	for i, want := range []storage.State{retrying, running, running, succeeded, exhausted} {
		if row := get(t, s, got[i].ID); row.State != want {
			t.Fatalf("task %d: %s, want %s", i, row.State, want)
		}
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task_attempt"); n != 2 {
		t.Fatalf("%d history rows, want 2: the failures whose fence held", n)
	}
}

// A succeeded attempt writes no history row: the task row records its
// start and worker, and Attempts lists it after the failed ones.
func finishSuccessOnTaskRow(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	task := newTask("ok", pending, 1, 0)
	insert(t, s, task)
	c := claimByID(t, s, task.ID, "w1", 10, 1000)
	if err := s.Finish(ctx, failure(c, retrying, 20, "first fails"), 20); err != nil {
		t.Fatal(err)
	}
	c2, err := s.ClaimByID(ctx, task.ID, task.ShardKey, retrying, "w2", 30, 1000)
	if err != nil || c2 == nil {
		t.Fatalf("claim of the retry: %v, %v", c2, err)
	}
	f := success(c2)
	if err := s.Finish(ctx, f, 40); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task_attempt WHERE task_pk = ?", task.ID); n != 1 {
		t.Fatalf("%d history rows, want 1 (the failure; the success is on the task row)", n)
	}
	row := get(t, s, task.ID)
	if row.State != succeeded || row.AttemptStartedAt != f.History.StartedAt || row.AttemptWorker != "w2" || row.ExecuteTimes != 2 {
		t.Fatalf("succeeded row: %+v", row)
	}
	atts := attempts(t, s, task.ID)
	if len(atts) != 2 || atts[0].Outcome != outcomeFailed || atts[0].Attempt != 1 ||
		atts[1].Outcome != outcomeSucceeded || atts[1].Attempt != 2 || atts[1].Worker != "w2" || atts[1].FinishedAt != 40 {
		t.Fatalf("history %+v, want attempt 1 failed, then attempt 2 succeeded by w2 at 40", atts)
	}
}

// A finish that gives the attempt back (released without running) takes
// execute_times back down, and writes no attempt.
func finishUndoAttempt(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	task := newTask("undo", pending, 1, 0)
	insert(t, s, task)
	c := claimByID(t, s, task.ID, "me", 10, 1000)
	if err := s.Finish(ctx, storage.Finishing{Fence: fenceOf(c), To: retrying, Due: 15, UndoAttempt: true}, 12); err != nil {
		t.Fatal(err)
	}
	if row := get(t, s, task.ID); row.State != retrying || row.ExecuteTimes != 0 || row.LeaseOwner != "" || row.ExecuteTime != 15 {
		t.Fatalf("released row: %+v, want retrying at attempt 0, due 15, unleased", row)
	}
	if atts := attempts(t, s, task.ID); len(atts) != 0 {
		t.Fatalf("a released attempt wrote history %+v", atts)
	}
}

// FinishLanded tells a finish that was written from one that was not (for
// a finish whose answer was lost): by its history row, or for a success by
// the task row's post-state.
func finishLanded(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	a, b := newTask("l", pending, 1, 0), newTask("l", pending, 1, 0)
	insert(t, s, a, b)
	ca, cb := claimByID(t, s, a.ID, "me", 10, 1000), claimByID(t, s, b.ID, "me", 10, 1000)
	fail, ok := failure(ca, retrying, 50, "boom"), success(cb)
	for _, f := range []storage.Finishing{fail, ok} {
		if landed, err := s.FinishLanded(ctx, f); err != nil || landed {
			t.Fatalf("before the finish of %d: landed %v, %v; want false", f.ID, landed, err)
		}
		if err := s.Finish(ctx, f, 20); err != nil {
			t.Fatal(err)
		}
		if landed, err := s.FinishLanded(ctx, f); err != nil || !landed {
			t.Fatalf("after the finish of %d: landed %v, %v; want true", f.ID, landed, err)
		}
	}
	// Another attempt's success, and the first one's failure on the next
	// attempt, are not taken for these.
	other := ok
	other.History = &storage.Attempt{TaskPK: cb.ID, Attempt: 1, Kind: "attempt", Worker: "someone else", StartedAt: 10, FinishedAt: 20, Outcome: outcomeSucceeded}
	if landed, err := s.FinishLanded(ctx, other); err != nil || landed {
		t.Fatalf("a success by another worker: landed %v, %v; want false", landed, err)
	}
	next := fail
	h := *fail.History
	h.Attempt = 2
	next.Attempt, next.History = 2, &h
	if landed, err := s.FinishLanded(ctx, next); err != nil || landed {
		t.Fatalf("attempt 2's failure: landed %v, %v; want false", landed, err)
	}
}
