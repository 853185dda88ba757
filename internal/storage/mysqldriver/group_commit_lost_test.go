package mysqldriver_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
)

// diamond is the group A → B, C → D as SubmitGroup writes it.
func diamond(now storage.Millis) []storage.DependentTask {
	tasks := make([]storage.DependentTask, 4)
	for i := range tasks {
		tasks[i].Task = &storage.Task{Name: "lost.group", State: storage.StatePending, MaxAttempts: 1, ExecuteTime: now,
			Parameter: fmt.Sprintf(`{"i":%d}`, i), PerformanceWay: argotype.Immediate, ThreadWay: argotype.Async,
			RetryPolicyJSON: `{"max_attempts":1}`, GmtCreate: now, GmtModified: now}
	}
	tasks[1].AfterCalls = []int{0}
	tasks[2].AfterCalls = []int{0}
	tasks[3].AfterCalls = []int{1, 2}
	return tasks
}

// groupRows reads the ids of the group's rows, and how many edges they have.
func groupRows(t *testing.T, s *storage.Store) (ids []int64, edges int) {
	t.Helper()
	ctx := context.Background()
	if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM argo_task_dep").Scan(&edges); err != nil {
		t.Fatal(err)
	}
	rows, err := s.DB().QueryContext(ctx, "SELECT id FROM argo_task WHERE task_id = 'lost.group' ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids, edges
}

// A group submit (SubmitGroup, Submit with After: one transaction) whose
// COMMIT committed but whose answer was lost is resolved by its rows'
// submit tokens: nil, with every row's id, as when the answer comes. If the
// database cannot be reached to tell, it is an *UnresolvedError (the
// runtime's ErrOutcomeUnknown), after the caller's deadline and at least
// SubmitResolveFloor. A statement before the COMMIT whose answer is lost
// leaves nothing written (the server rolls the transaction back) and says
// so. Before the fix the lost COMMIT answered "invalid connection", which
// the runtime reported as ErrNotPersisted although all four rows were
// written (the fault checker, seed 45 with deps, invariant answer).
func TestGroupSubmitWhoseCommitAnswerIsLost(t *testing.T) {
	ctx := context.Background()
	t.Run("written", func(t *testing.T) {
		dsn := testdb.MySQLDSN(t)
		proxy := testdb.NewFaultProxy(t, dsn)
		s := openStore(t, proxy.DSN(dsn), false)
		tasks := diamond(storage.ToMillis(time.Now()))
		proxy.CutAnswer(bareCommit, 1)
		err := s.InsertDependent(ctx, tasks, storage.ToMillis(time.Now()))
		if proxy.Cuts() != 1 {
			t.Fatalf("the proxy lost %d answers, want 1 (the group's COMMIT)", proxy.Cuts())
		}
		ids, edges := groupRows(t, s)
		if err != nil {
			t.Fatalf("group whose COMMIT's answer was lost: %v, though %d rows and %d edges were written", err, len(ids), edges)
		}
		var got []int64
		for _, dt := range tasks {
			got = append(got, dt.Task.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, ids) || edges != 4 {
			t.Fatalf("ids returned %v, rows %v, %d edges; want the four rows' ids and 4 edges", got, ids, edges)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		dsn := testdb.MySQLDSN(t)
		proxy := testdb.NewFaultProxy(t, dsn)
		s := openStore(t, proxy.DSN(dsn), false)
		proxy.CutAnswer(bareCommit, 1)
		proxy.RefuseAfterCut()
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := s.InsertDependent(cctx, diamond(storage.ToMillis(time.Now())), storage.ToMillis(time.Now()))
		var unresolved *storage.UnresolvedError
		if !errors.As(err, &unresolved) {
			t.Fatalf("group whose COMMIT's answer was lost, the database unreachable: %v, want an UnresolvedError", err)
		}
		if took := time.Since(start); took < storage.SubmitResolveFloor {
			t.Fatalf("gave up after %s, before the floor of %s", took, storage.SubmitResolveFloor)
		}
	})
	t.Run("not written", func(t *testing.T) {
		dsn := testdb.MySQLDSN(t)
		proxy := testdb.NewFaultProxy(t, dsn)
		s := openStore(t, proxy.DSN(dsn), false)
		proxy.CutAnswer("INSERT INTO argo_task_dep", 1)
		err := s.InsertDependent(ctx, diamond(storage.ToMillis(time.Now())), storage.ToMillis(time.Now()))
		if proxy.Cuts() != 1 {
			t.Fatalf("the proxy lost %d answers, want 1 (the edges' INSERT)", proxy.Cuts())
		}
		ids, edges := groupRows(t, s)
		var unresolved *storage.UnresolvedError
		if err == nil || errors.As(err, &unresolved) || len(ids) != 0 || edges != 0 {
			t.Fatalf("group whose edges' INSERT lost its answer: %v, %d rows, %d edges; want a definite error and nothing written", err, len(ids), edges)
		}
	})
}

// A requeue (one transaction: the new row, the old row's link, the trail)
// whose COMMIT committed but whose answer was lost returns the new task's
// id, read by its submit token, as when the answer comes; before the fix it
// answered "invalid connection", and requeueing again was refused as
// already requeued.
func TestRequeueWhoseCommitAnswerIsLost(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.MySQLDSN(t)
	proxy := testdb.NewFaultProxy(t, dsn)
	s := openStore(t, proxy.DSN(dsn), false)
	now := storage.ToMillis(time.Now())
	dead := diamond(now)[0].Task
	dead.State = storage.StateDead
	if err := s.Insert(ctx, nil, dead); err != nil {
		t.Fatal(err)
	}
	proxy.CutAnswer(bareCommit, 1)
	newID, err := s.RequeueAsNew(ctx, dead.ID, "lost answer", "op", now+1)
	if proxy.Cuts() != 1 {
		t.Fatalf("the proxy lost %d answers, want 1 (the requeue's COMMIT)", proxy.Cuts())
	}
	links, lerr := s.Links(ctx, dead.ID)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if err != nil || newID == 0 || links.To != newID {
		t.Fatalf("requeue whose COMMIT's answer was lost: id %d, %v; the old row links to %+v", newID, err, links)
	}
}
