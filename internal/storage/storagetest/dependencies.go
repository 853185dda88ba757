package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// dependencyCases: tasks that run after others, the cascade skip and the
// release of a blocked task in the transaction that ends its last upstream
// task (migration 000007).
func dependencyCases() []testCase {
	var cases []testCase
	for _, p := range writePaths {
		cases = append(cases,
			testCase{"SeedAcceptance/" + p.name, func(t *testing.T, e Engine) { depSeedAcceptance(t, e, p.finish) }},
			testCase{"ReleasedByTheFinish/" + p.name, func(t *testing.T, e Engine) { depReleasedByFinish(t, e, p.finish) }},
		)
	}
	return append(cases,
		testCase{"BlockedNotClaimable", depBlockedNotClaimable},
		testCase{"Diamond", depDiamond},
		testCase{"OperatorEndsUpstream", depOperatorEndsUpstream},
		testCase{"Refused", depRefused},
		testCase{"AfterExistingTasks", depAfterExisting},
		testCase{"SubmitRacingTheUpstreamFinish", depSubmitRacingFinish},
		testCase{"Chain1000", depChain},
		testCase{"PurgedWithTheirEdges", depPurge},
		testCase{"RequeueBringsBackSkipped", depRequeue},
		testCase{"SweepSettlesLostReleases", depSweep},
	)
}

// group builds a dependent submit of names, where after[i] lists the
// indices task i runs after.
func group(due Millis, names []string, after map[int][]int) []storage.DependentTask {
	out := make([]storage.DependentTask, len(names))
	for i, n := range names {
		out[i] = storage.DependentTask{Task: newTask(n, pending, due, 0), AfterCalls: after[i]}
	}
	return out
}

// submitGroup writes g or fails the test, and returns the ids.
func submitGroup(t *testing.T, s *storage.Store, g []storage.DependentTask, now Millis) []int64 {
	t.Helper()
	if err := s.InsertDependent(context.Background(), g, now); err != nil {
		t.Fatalf("dependent submit: %v", err)
	}
	ids := make([]int64, len(g))
	for i, dt := range g {
		ids[i] = dt.Task.ID
	}
	return ids
}

// wantStates fails the test unless each task has its state.
func wantStates(t *testing.T, s *storage.Store, what string, want map[int64]storage.State) {
	t.Helper()
	for id, st := range want {
		if got := get(t, s, id).State; got != st {
			t.Fatalf("%s: task %d is %s, want %s", what, id, got, st)
		}
	}
}

// claimOnly claims every due task and fails unless exactly ids were taken.
func claimOnly(t *testing.T, s *storage.Store, now Millis, ids ...int64) []*storage.Task {
	t.Helper()
	got, err := s.ClaimDue(context.Background(), "w", now, now+60_000, 100, []string{"a", "b", "c", "d", "chain"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	gotIDs := idsOf(got)
	slices.Sort(gotIDs)
	want := slices.Clone(ids)
	slices.Sort(want)
	if !slices.Equal(gotIDs, want) {
		t.Fatalf("claimed %v, want exactly %v", gotIDs, want)
	}
	return got
}

// die takes claimed task ct to the dead letter as a worker does: exhausted,
// its fallback claimed, and the fallback's failure written by finish.
func die(t *testing.T, s *storage.Store, finish finishFunc, ct *storage.Task, now Millis) {
	t.Helper()
	ctx := context.Background()
	if err := s.Finish(ctx, failure(ct, exhausted, now, "boom"), now); err != nil {
		t.Fatalf("exhaust %d: %v", ct.ID, err)
	}
	fb, err := s.ClaimByID(ctx, ct.ID, ct.ShardKey, exhausted, "w", now, now+60_000)
	if err != nil || fb == nil || fb.State != fallingBack {
		t.Fatalf("claim the fallback of %d: %+v, %v", ct.ID, fb, err)
	}
	msg := "fallback failed"
	f := storage.Finishing{Fence: fenceOf(fb), To: dead, Due: now, FallbackErr: &msg,
		History: &storage.Attempt{TaskPK: fb.ID, Attempt: fb.ExecuteTimes, Kind: "fallback", Worker: "w", StartedAt: now, FinishedAt: now, Outcome: outcomeFailed, Error: msg}}
	if err := finish(ctx, s, f, now); err != nil {
		t.Fatalf("fallback of %d failed: %v", ct.ID, err)
	}
}

// The seed's acceptance list (SPEC-003): A fails → B (after A) and C (after
// A and B) are skipped with a reason naming A; D (independent) is untouched
// and runs.
func depSeedAcceptance(t *testing.T, e Engine, finish finishFunc) {
	s := e.Open(t)
	ctx := ctxFor(t)
	ids := submitGroup(t, s, group(100, []string{"a", "b", "c", "d"}, map[int][]int{1: {0}, 2: {0, 1}}), 100)
	a, b, c, d := ids[0], ids[1], ids[2], ids[3]
	wantStates(t, s, "submitted", map[int64]storage.State{a: pending, b: storage.StateBlocked, c: storage.StateBlocked, d: pending})
	claimed := claimOnly(t, s, 200, a, d)
	for _, ct := range claimed {
		if ct.ID == a {
			die(t, s, finish, ct, 300)
			continue
		}
		if err := finish(ctx, s, success(ct), 300); err != nil {
			t.Fatalf("finish %d: %v", ct.ID, err)
		}
	}
	wantStates(t, s, "after A died", map[int64]storage.State{a: dead, b: storage.StateSkipped, c: storage.StateSkipped, d: succeeded})
	wantReason := fmt.Sprintf("upstream task %d failed", a)
	for _, id := range []int64{b, c} {
		if row := get(t, s, id); !strings.HasPrefix(row.ErrorMsg, wantReason) || row.GmtModified != 300 || row.ExecuteTimes != 0 {
			t.Fatalf("skipped task %d: error_msg %q gmt_modified %d attempts %d, want %q…, 300, 0", id, row.ErrorMsg, row.GmtModified, row.ExecuteTimes, wantReason)
		}
	}
	claimOnly(t, s, 10_000) // nothing left to run
}

// A blocked task becomes pending in the transaction of its last upstream
// task's successful finish: right after that finish returns, with nothing
// else running, it is claimable.
func depReleasedByFinish(t *testing.T, e Engine, finish finishFunc) {
	s := e.Open(t)
	ctx := ctxFor(t)
	ids := submitGroup(t, s, group(100, []string{"a", "b"}, map[int][]int{1: {0}}), 100)
	ca := claimOnly(t, s, 200, ids[0])[0]
	if err := finish(ctx, s, success(ca), 300); err != nil {
		t.Fatal(err)
	}
	wantStates(t, s, "after A succeeded", map[int64]storage.State{ids[0]: succeeded, ids[1]: pending})
	if row := get(t, s, ids[1]); row.GmtModified != 300 {
		t.Fatalf("released task's gmt_modified %d, want 300 (the finish's time)", row.GmtModified)
	}
	claimOnly(t, s, 400, ids[1])
	// A finish that lost its lease settles nothing wrong: the upstream is
	// already succeeded, so a second (refused) finish changes no edge.
	wantLeaseLost(t, "second finish", finish(ctx, s, success(ca), 500))
	wantStates(t, s, "after the refused finish", map[int64]storage.State{ids[1]: running})
}

// A blocked task is claimable by no claim, even long overdue, nor by id;
// the dead-letter and oldest-due reads do not see it either.
func depBlockedNotClaimable(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	up := newTask("a", retrying, 1_000_000, 0) // due far away
	up.ExecuteTimes = 1
	insert(t, s, up)
	g := []storage.DependentTask{{Task: newTask("b", pending, 100, 0), After: []int64{up.ID}}}
	id := submitGroup(t, s, g, 100)[0]
	wantStates(t, s, "submitted", map[int64]storage.State{id: storage.StateBlocked})
	claimOnly(t, s, 500_000)
	if c, err := s.ClaimByID(ctx, id, 0, pending, "w", 500_000, 600_000); err != nil || c != nil {
		t.Fatalf("claim by id of a blocked task: %v, %v; want nothing", c, err)
	}
	if c, err := s.ClaimByID(ctx, id, 0, storage.StateBlocked, "w", 500_000, 600_000); err == nil && c != nil {
		t.Fatalf("claim by id from blocked took %+v", c)
	}
	wantStates(t, s, "after the claims", map[int64]storage.State{id: storage.StateBlocked})
}

// A diamond: B and C after A, D after B and C. D waits for both; a failure
// of C skips D but not B.
func depDiamond(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	run := func(cFails bool) {
		ids := submitGroup(t, s, group(100, []string{"a", "b", "c", "d"}, map[int][]int{1: {0}, 2: {0}, 3: {1, 2}}), 100)
		a, b, c, d := ids[0], ids[1], ids[2], ids[3]
		ok := func(ct *storage.Task) {
			if err := s.Finish(ctx, success(ct), 300); err != nil {
				t.Fatal(err)
			}
		}
		ok(claimOnly(t, s, 200, a)[0])
		wantStates(t, s, "after A", map[int64]storage.State{b: pending, c: pending, d: storage.StateBlocked})
		both := claimOnly(t, s, 400, b, c)
		for _, ct := range both {
			if ct.ID == b {
				ok(ct)
			}
		}
		wantStates(t, s, "after B only", map[int64]storage.State{d: storage.StateBlocked})
		for _, ct := range both {
			if ct.ID != c {
				continue
			}
			if cFails {
				die(t, s, writePaths[0].finish, ct, 500)
				wantStates(t, s, "after C died", map[int64]storage.State{b: succeeded, d: storage.StateSkipped})
				if msg := get(t, s, d).ErrorMsg; !strings.Contains(msg, fmt.Sprintf("upstream task %d failed", c)) {
					t.Fatalf("D's reason %q does not name C (%d)", msg, c)
				}
				claimOnly(t, s, 600)
				return
			}
			ok(ct)
		}
		wantStates(t, s, "after B and C", map[int64]storage.State{d: pending})
		ok(claimOnly(t, s, 600, d)[0])
	}
	run(false)
	run(true)
}

// An operator's discard of an upstream task (or its force-fail) skips its
// downstream tasks, naming it.
func depOperatorEndsUpstream(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	ids := submitGroup(t, s, group(100, []string{"a", "b", "c"}, map[int][]int{1: {0}, 2: {1}}), 100)
	if err := s.DiscardRecorded(ctx, ids[0], "not needed", "op", 200); err != nil {
		t.Fatal(err)
	}
	wantStates(t, s, "after the discard", map[int64]storage.State{ids[1]: storage.StateSkipped, ids[2]: storage.StateSkipped})
	if msg := get(t, s, ids[2]).ErrorMsg; msg != fmt.Sprintf("upstream task %d was discarded", ids[0]) {
		t.Fatalf("transitively skipped task's reason %q", msg)
	}

	ids = submitGroup(t, s, group(100, []string{"a", "b"}, map[int][]int{1: {0}}), 100)
	ca := claimOnly(t, s, 200, ids[0])[0]
	if err := s.Finish(ctx, failure(ca, retrying, 1_000_000, "flaky"), 300); err != nil {
		t.Fatal(err)
	}
	wantStates(t, s, "while A retries", map[int64]storage.State{ids[1]: storage.StateBlocked})
	if err := s.ForceFail(ctx, ids[0], "give up", "op", 400); err != nil {
		t.Fatal(err)
	}
	wantStates(t, s, "after the force-fail", map[int64]storage.State{ids[1]: storage.StateSkipped})

	// A blocked task may be discarded too; its own downstream tasks are skipped.
	ids = submitGroup(t, s, group(100, []string{"a", "b", "c"}, map[int][]int{1: {0}, 2: {1}}), 100)
	if err := s.DiscardRecorded(ctx, ids[1], "not wanted", "op", 500); err != nil {
		t.Fatal(err)
	}
	wantStates(t, s, "after the discard of the blocked task", map[int64]storage.State{ids[0]: pending, ids[1]: discarded, ids[2]: storage.StateSkipped})
}

// Refused submits write nothing and say why: a cycle, an index out of
// range, an unknown upstream task, a dead one.
func depRefused(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	deadRow := newTask("a", dead, 100, 0)
	insert(t, s, deadRow)
	for _, c := range []struct {
		name string
		g    []storage.DependentTask
		want string
	}{
		{"cycle", group(100, []string{"a", "b", "c"}, map[int][]int{0: {2}, 1: {0}, 2: {1}}), "cycle"},
		{"self", group(100, []string{"a"}, map[int][]int{0: {0}}), "cycle"},
		{"index", group(100, []string{"a"}, map[int][]int{0: {3}}), "not in the submit"},
		{"unknown", []storage.DependentTask{{Task: newTask("a", pending, 100, 0), After: []int64{deadRow.ID + 1_000_000}}}, "does not exist"},
		{"dead", []storage.DependentTask{{Task: newTask("a", pending, 100, 0)}, {Task: newTask("b", pending, 100, 0), After: []int64{deadRow.ID}}}, "is dead"},
	} {
		err := s.InsertDependent(ctx, c.g, 100)
		if !errors.Is(err, storage.ErrDependency) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v, want ErrDependency saying %q", c.name, err, c.want)
		}
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task"); n != 1 {
		t.Fatalf("%d task rows after refused submits, want 1 (the dead one)", n)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task_dep"); n != 0 {
		t.Fatalf("%d edges after refused submits, want 0", n)
	}
}

// After an existing task: succeeded → pending at once (the edge recorded
// as satisfied), running → blocked until it succeeds.
func depAfterExisting(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	done := newTask("a", succeeded, 100, 0)
	insert(t, s, done)
	up := newTask("a", pending, 100, 0)
	insert(t, s, up)
	cu := claimOnly(t, s, 150, up.ID)[0]
	g := []storage.DependentTask{
		{Task: newTask("b", pending, 100, 0), After: []int64{done.ID}},
		{Task: newTask("c", pending, 100, 0), After: []int64{done.ID, up.ID}},
	}
	ids := submitGroup(t, s, g, 200)
	wantStates(t, s, "submitted", map[int64]storage.State{ids[0]: pending, ids[1]: storage.StateBlocked})
	ups, err := s.Upstream(ctx, ids[1])
	if err != nil || len(ups) != 2 {
		t.Fatalf("upstream of %d: %v, %v", ids[1], ups, err)
	}
	if err := s.Finish(ctx, success(cu), 300); err != nil {
		t.Fatal(err)
	}
	wantStates(t, s, "after the running upstream succeeded", map[int64]storage.State{ids[1]: pending})
	downs, err := s.Downstream(ctx, up.ID)
	if err != nil || len(downs) != 1 || downs[0].TaskID != ids[1] || downs[0].Outcome != storage.UpstreamSucceeded {
		t.Fatalf("downstream of %d: %+v, %v", up.ID, downs, err)
	}
}

// A submit after a running task racing that task's successful finish ends
// with the new task pending, never blocked for ever: the submit reads the
// upstream row locked, so either the finish sees the edge or the submit
// sees the task succeeded.
func depSubmitRacingFinish(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	for round := 0; round < 20; round++ {
		up := newTask("a", pending, 100, 0)
		insert(t, s, up)
		cu := claimOnly(t, s, 150, up.ID)[0]
		g := []storage.DependentTask{{Task: newTask("b", pending, 100, 0), After: []int64{up.ID}}}
		var wg sync.WaitGroup
		var submitErr, finishErr error
		wg.Add(2)
		go func() { defer wg.Done(); submitErr = s.InsertDependent(ctx, g, 200) }()
		go func() { defer wg.Done(); finishErr = s.Finish(ctx, success(cu), 200) }()
		wg.Wait()
		if submitErr != nil || finishErr != nil {
			t.Fatalf("round %d: submit %v, finish %v", round, submitErr, finishErr)
		}
		wantStates(t, s, fmt.Sprintf("round %d", round), map[int64]storage.State{g[0].Task.ID: pending})
		if err := s.DiscardRecorded(ctx, g[0].Task.ID, "done with it", "test", 300); err != nil {
			t.Fatal(err)
		}
	}
}

// A chain of 1,000 tasks submitted at once runs in order: each claim finds
// exactly the next task.
func depChain(t *testing.T, e Engine) {
	s := e.Open(t)
	// 2,000 statements one after another: about 4 s on SQLite, but under
	// -race beside the rest of make test it came within reach of the
	// suite's per-case deadline (task 929 of 1,000 at 60 s in one run).
	ctx, cancel := context.WithTimeout(context.Background(), 4*caseTimeout)
	defer cancel()
	const n = 1000
	names := make([]string, n)
	after := map[int][]int{}
	for i := range names {
		names[i] = "chain"
		if i > 0 {
			after[i] = []int{i - 1}
		}
	}
	start := time.Now()
	ids := submitGroup(t, s, group(100, names, after), 100)
	submitted := time.Since(start)
	for i, id := range ids {
		c := claimOnly(t, s, Millis(200+i), id)[0]
		if err := s.Finish(ctx, success(c), Millis(200+i)); err != nil {
			t.Fatalf("task %d of the chain: %v", i, err)
		}
	}
	t.Logf("chain of %d: submitted in %v, run in order in %v", n, submitted, time.Since(start)-submitted)
}

// The retention purge deletes skipped tasks like discarded ones, and the
// edges of every task it deletes, at either end.
func depPurge(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	ids := submitGroup(t, s, group(100, []string{"a", "b"}, map[int][]int{1: {0}}), 100)
	if err := s.DiscardRecorded(ctx, ids[0], "not needed", "op", 200); err != nil {
		t.Fatal(err)
	}
	wantStates(t, s, "after the discard", map[int64]storage.State{ids[1]: storage.StateSkipped})
	n, err := s.Purge(ctx, 1000, 10)
	if err != nil || n != 2 {
		t.Fatalf("purge: %d, %v; want the discarded and the skipped task", n, err)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task_dep"); n != 0 {
		t.Fatalf("%d edges left after the purge of both ends", n)
	}
}

// A requeue of a failed upstream task as a new task brings back, blocked
// and now after the new task, the tasks skipped because of it; a task that
// also ran after another failed task stays skipped. The new task's success
// then releases them in order.
func depRequeue(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	// 0 A; 1 X; 2 B after A; 3 C after B; 4 E after A and X.
	ids := submitGroup(t, s, group(100, []string{"a", "b", "b", "c", "d"}, map[int][]int{2: {0}, 3: {2}, 4: {0, 1}}), 100)
	a, x, b, c, ee := ids[0], ids[1], ids[2], ids[3], ids[4]
	for _, id := range []int64{x, a} {
		if err := s.DiscardRecorded(ctx, id, "wrong input", "op", 200); err != nil {
			t.Fatal(err)
		}
	}
	wantStates(t, s, "after the discards", map[int64]storage.State{b: storage.StateSkipped, c: storage.StateSkipped, ee: storage.StateSkipped})
	fresh, err := s.RequeueAsNew(ctx, a, "input fixed", "op", 300)
	if err != nil {
		t.Fatal(err)
	}
	wantStates(t, s, "after the requeue", map[int64]storage.State{b: storage.StateBlocked, c: storage.StateBlocked, ee: storage.StateSkipped, fresh: pending})
	if row := get(t, s, b); row.ErrorMsg != "" || row.GmtModified != 300 {
		t.Fatalf("brought-back task: error %q, gmt_modified %d; want no error, 300", row.ErrorMsg, row.GmtModified)
	}
	if ups, err := s.Upstream(ctx, b); err != nil || len(ups) != 1 || ups[0].TaskID != fresh || ups[0].Outcome != storage.UpstreamUnfinished {
		t.Fatalf("upstream of B after the requeue: %+v, %v; want the new task %d, unsettled", ups, err, fresh)
	}
	if ups, err := s.Upstream(ctx, ee); err != nil || len(ups) != 2 {
		t.Fatalf("upstream of E: %+v, %v", ups, err)
	}
	if err := s.Finish(ctx, success(claimOnly(t, s, 400, fresh)[0]), 400); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, success(claimOnly(t, s, 500, b)[0]), 500); err != nil {
		t.Fatal(err)
	}
	claimOnly(t, s, 600, c)
}
