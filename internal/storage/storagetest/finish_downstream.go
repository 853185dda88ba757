package storagetest

import (
	"context"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// finishDownstreamCases: a finish pays for dependencies only when its task
// has downstream tasks (migration 000017, has_downstream; issue #23). A
// task read without them finishes with its one fenced UPDATE, which also
// requires has_downstream = 0, so a task submitted to run after it between
// its claim and its finish is still released (or skipped) by that finish.
func finishDownstreamCases() []testCase {
	var cases []testCase
	for _, p := range writePaths {
		cases = append(cases,
			testCase{"EdgeAddedAfterTheClaim/" + p.name, func(t *testing.T, e Engine) { downstreamAddedAfterClaim(t, e, p.finish) }},
			testCase{"EdgeAddedBeforeTheDeath/" + p.name, func(t *testing.T, e Engine) { downstreamAddedBeforeDeath(t, e, p.finish) }},
			testCase{"LeaseLostWithoutDownstream/" + p.name, func(t *testing.T, e Engine) { downstreamLeaseLost(t, e, p.finish) }},
		)
	}
	return append(cases,
		testCase{"FlagWrittenWithTheEdge", downstreamFlagWritten},
		testCase{"BatchWithAnEdgeAddedAfterTheClaim", downstreamBatchMixed},
	)
}

// hasDownstream reads task id's has_downstream column.
func hasDownstream(t *testing.T, s *storage.Store, id int64) bool {
	t.Helper()
	return count(t, s, "SELECT has_downstream FROM argo_task WHERE id = ?", id) == 1
}

// claimThenDepend claims a new task U (name a), then submits D (name b)
// after it, and returns U as claimed (without downstream tasks) and D.
func claimThenDepend(t *testing.T, s *storage.Store) (*storage.Task, int64) {
	t.Helper()
	up := newTask("a", pending, 100, 0)
	insert(t, s, up)
	cu := claimOnly(t, s, 150, up.ID)[0]
	if cu.HasDownstream {
		t.Fatalf("task %d claimed with has_downstream set before any task ran after it", cu.ID)
	}
	d := submitGroup(t, s, []storage.DependentTask{{Task: newTask("b", pending, 100, 0), After: []int64{up.ID}}}, 200)[0]
	wantStates(t, s, "submitted after the running task", map[int64]storage.State{d: storage.StateBlocked})
	if !hasDownstream(t, s, up.ID) {
		t.Fatalf("task %d: has_downstream not set by the submit of task %d after it", up.ID, d)
	}
	return cu, d
}

// The break a flag read at the claim alone would make: U claimed without
// downstream tasks, D submitted after it while it runs, U's success
// skipping the release: D blocked until the blocked sweeper (a minute). The
// finish's fence on has_downstream = 0 fails, and its dependency
// statements run: D is pending when the finish returns.
func downstreamAddedAfterClaim(t *testing.T, e Engine, finish finishFunc) {
	s := e.Open(t)
	ctx := ctxFor(t)
	cu, d := claimThenDepend(t, s)
	if err := finish(ctx, s, success(cu), 300); err != nil {
		t.Fatalf("finish of task %d: %v", cu.ID, err)
	}
	wantStates(t, s, "after the upstream task's success", map[int64]storage.State{cu.ID: succeeded, d: pending})
	if ds, err := s.Downstream(ctx, cu.ID); err != nil || len(ds) != 1 || ds[0].Outcome != storage.UpstreamSucceeded {
		t.Fatalf("downstream of %d: %+v, %v; want task %d, edge settled", cu.ID, ds, err, d)
	}
	claimOnly(t, s, 400, d)
}

// The same for a death (a finish with an attempt row): D submitted after U
// while U's fallback runs is skipped by the fallback's failure, and the
// fallback's attempt row is written once (on MySQL's one-trip path its
// INSERT … SELECT is fenced on has_downstream = 0 as well: without that it
// was written by the first try and again by the second).
func downstreamAddedBeforeDeath(t *testing.T, e Engine, finish finishFunc) {
	s := e.Open(t)
	ctx := ctxFor(t)
	up := newTask("a", pending, 100, 0)
	insert(t, s, up)
	cu := claimOnly(t, s, 150, up.ID)[0]
	if err := s.Finish(ctx, failure(cu, exhausted, 160, "boom"), 160); err != nil {
		t.Fatal(err)
	}
	fb, err := s.ClaimByID(ctx, up.ID, up.ShardKey, exhausted, "w", 170, 60_000)
	if err != nil || fb == nil || fb.State != fallingBack || fb.HasDownstream {
		t.Fatalf("claim of the fallback of %d: %+v, %v", up.ID, fb, err)
	}
	d := submitGroup(t, s, []storage.DependentTask{{Task: newTask("b", pending, 100, 0), After: []int64{up.ID}}}, 200)[0]
	msg := "fallback failed"
	f := storage.Finishing{Fence: fenceOf(fb), To: dead, Due: 300, FallbackErr: &msg,
		History: &storage.Attempt{TaskPK: fb.ID, Attempt: fb.ExecuteTimes, Kind: "fallback", Worker: "w", StartedAt: 250, FinishedAt: 300, Outcome: outcomeFailed, Error: msg}}
	if err := finish(ctx, s, f, 300); err != nil {
		t.Fatalf("the fallback's failure: %v", err)
	}
	wantStates(t, s, "after the upstream task died", map[int64]storage.State{up.ID: dead, d: storage.StateSkipped})
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task_attempt WHERE task_pk = ? AND kind = 'fallback'", up.ID); n != 1 {
		t.Fatalf("%d fallback attempt rows for task %d, want 1", n, up.ID)
	}
}

// A finish without downstream tasks whose lease is gone is refused
// (ErrLeaseLost) and writes nothing, though its first, fast try and its
// try with the dependency statements both fail.
func downstreamLeaseLost(t *testing.T, e Engine, finish finishFunc) {
	s := e.Open(t)
	ctx := ctxFor(t)
	up := newTask("a", pending, 100, 0)
	insert(t, s, up)
	cu := claimOnly(t, s, 150, up.ID)[0]
	stale := *cu
	stale.LeaseOwner = "someone-else"
	wantLeaseLost(t, "finish under a lease not held", finish(ctx, s, success(&stale), 300))
	if row := get(t, s, up.ID); row.State != running || row.LeaseOwner != cu.LeaseOwner || row.GmtModified != cu.GmtModified {
		t.Fatalf("task %d after a refused finish: %s, owner %q, gmt_modified %d; want running, %q, %d", up.ID, row.State, row.LeaseOwner, row.GmtModified, cu.LeaseOwner, cu.GmtModified)
	}
	if err := finish(ctx, s, success(cu), 400); err != nil {
		t.Fatalf("finish under the lease held: %v", err)
	}
	wantStates(t, s, "after the finish", map[int64]storage.State{up.ID: succeeded})
}

// has_downstream is written in the transaction that writes an edge naming
// the task: on an existing unfinished upstream task and on a task of the
// same group that others run after; not on a task no one runs after, nor
// on an upstream task that has succeeded already (its finish is over).
func downstreamFlagWritten(t *testing.T, e Engine) {
	s := e.Open(t)
	done := newTask("a", succeeded, 100, 0)
	open := newTask("a", pending, 100, 0)
	insert(t, s, done, open)
	ids := submitGroup(t, s, []storage.DependentTask{
		{Task: newTask("a", pending, 100, 0)},                                   // 0: A
		{Task: newTask("b", pending, 100, 0), AfterCalls: []int{0}},             // 1: B after A
		{Task: newTask("c", pending, 100, 0)},                                   // 2: C, independent
		{Task: newTask("d", pending, 100, 0), After: []int64{done.ID, open.ID}}, // 3: after existing tasks
	}, 200)
	for id, want := range map[int64]bool{done.ID: false, open.ID: true, ids[0]: true, ids[1]: false, ids[2]: false, ids[3]: false} {
		if got := hasDownstream(t, s, id); got != want {
			t.Errorf("task %d: has_downstream %v, want %v", id, got, want)
		}
	}
	if got := get(t, s, ids[0]); !got.HasDownstream {
		t.Errorf("task %d read without its has_downstream", ids[0])
	}
}

// A batch of finishes, one of a task submitted after since its claim and
// one of a task without downstream tasks: both written, the dependent task
// released (on MySQL's one-trip path, the first is run again on its own).
func downstreamBatchMixed(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := context.Background()
	plain := newTask("c", pending, 100, 0)
	insert(t, s, plain)
	cp := claimOnly(t, s, 120, plain.ID)[0]
	cu, d := claimThenDepend(t, s)
	errs, err := s.FinishBatch(ctx, []storage.Finishing{success(cu), success(cp)}, 300)
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("batch: %v, %v", errs, err)
	}
	wantStates(t, s, "after the batch", map[int64]storage.State{cu.ID: succeeded, plain.ID: succeeded, d: pending})
}
