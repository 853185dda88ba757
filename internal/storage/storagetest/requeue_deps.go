package storagetest

import (
	"errors"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// requeueDependencyCases: a requeue of a task with upstream tasks writes
// the new task with the same dependencies (docs/dependencies.md,
// "Requeue"): blocked while an upstream task is unfinished, due at once
// when each has succeeded, after the newest task of an upstream task that
// was requeued, and refused while an upstream task has failed for good.
func requeueDependencyCases() []testCase {
	return []testCase{
		{"KeepsAnUnfinishedUpstream", requeueKeepsUnfinishedUpstream},
		{"SettledUpstreamDueAtOnce", requeueSettledUpstream},
		{"FollowsARequeuedUpstream", requeueFollowsRequeuedUpstream},
		{"RefusedWhileAnUpstreamFailed", requeueRefusedFailedUpstream},
	}
}

// discardBlocked submits U (name a) and D (name b) after U, claims U so that
// it runs, discards D while it is blocked, and returns U's claimed row and D.
func discardBlocked(t *testing.T, s *storage.Store) (*storage.Task, int64) {
	t.Helper()
	ids := submitGroup(t, s, group(100, []string{"a", "b"}, map[int][]int{1: {0}}), 100)
	u := claimOnly(t, s, 150, ids[0])[0]
	if err := s.DiscardRecorded(ctxFor(t), ids[1], "not now", "op", 200); err != nil {
		t.Fatal(err)
	}
	wantStates(t, s, "after the discard", map[int64]storage.State{ids[1]: discarded})
	return u, ids[1]
}

// The break: a task discarded while blocked, requeued while its upstream
// task still runs, was written pending and due now, without its edge, and
// ran before the upstream task ended. It must wait, blocked, and be
// released by the upstream task's success.
func requeueKeepsUnfinishedUpstream(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	u, d := discardBlocked(t, s)
	fresh, err := s.RequeueAsNew(ctx, d, "wanted after all", "op", 300)
	if err != nil {
		t.Fatal(err)
	}
	wantStates(t, s, "after the requeue", map[int64]storage.State{fresh: storage.StateBlocked, u.ID: running})
	ups, err := s.Upstream(ctx, fresh)
	if err != nil || len(ups) != 1 || ups[0].TaskID != u.ID || ups[0].Outcome != storage.UpstreamUnfinished {
		t.Fatalf("upstream of the requeued task: %+v, %v; want task %d, unsettled", ups, err, u.ID)
	}
	claimOnly(t, s, 400) // nothing: U runs, the new task waits for it
	if err := s.Finish(ctx, success(u), 500); err != nil {
		t.Fatal(err)
	}
	claimOnly(t, s, 600, fresh)
}

// An upstream task that succeeded before the requeue: the new task is due
// at once, its edge written settled.
func requeueSettledUpstream(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	u, d := discardBlocked(t, s)
	if err := s.Finish(ctx, success(u), 250); err != nil {
		t.Fatal(err)
	}
	fresh, err := s.RequeueAsNew(ctx, d, "", "op", 300)
	if err != nil {
		t.Fatal(err)
	}
	wantStates(t, s, "after the requeue", map[int64]storage.State{fresh: pending})
	ups, err := s.Upstream(ctx, fresh)
	if err != nil || len(ups) != 1 || ups[0].TaskID != u.ID || ups[0].Outcome != storage.UpstreamSucceeded {
		t.Fatalf("upstream of the requeued task: %+v, %v; want task %d, succeeded", ups, err, u.ID)
	}
	claimOnly(t, s, 400, fresh)
}

// An upstream task that failed and was requeued itself: the new task runs
// after the upstream task's newest task (the old one will never succeed).
func requeueFollowsRequeuedUpstream(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	u, d := discardBlocked(t, s)
	die(t, s, writePaths[0].finish, u, 250)
	u2, err := s.RequeueAsNew(ctx, u.ID, "", "op", 260)
	if err != nil {
		t.Fatal(err)
	}
	u3, err := func() (int64, error) { // and once more: the chain is followed to its end
		if err := s.DiscardRecorded(ctx, u2, "again", "op", 270); err != nil {
			return 0, err
		}
		return s.RequeueAsNew(ctx, u2, "", "op", 280)
	}()
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := s.RequeueAsNew(ctx, d, "", "op", 300)
	if err != nil {
		t.Fatal(err)
	}
	wantStates(t, s, "after the requeue", map[int64]storage.State{fresh: storage.StateBlocked})
	ups, err := s.Upstream(ctx, fresh)
	if err != nil || len(ups) != 1 || ups[0].TaskID != u3 || ups[0].Outcome != storage.UpstreamUnfinished {
		t.Fatalf("upstream of the requeued task: %+v, %v; want the newest upstream task %d, unsettled", ups, err, u3)
	}
	ct := claimOnly(t, s, 400, u3)[0]
	if err := s.Finish(ctx, success(ct), 500); err != nil {
		t.Fatal(err)
	}
	claimOnly(t, s, 600, fresh)
}

// An upstream task that is dead or discarded and not requeued will never
// succeed: the requeue is refused (ErrDependency, naming it) and nothing
// is written.
func requeueRefusedFailedUpstream(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	u, d := discardBlocked(t, s)
	die(t, s, writePaths[0].finish, u, 250)
	before := count(t, s, "SELECT COUNT(*) FROM argo_task")
	_, err := s.RequeueAsNew(ctx, d, "", "op", 300)
	if !errors.Is(err, storage.ErrDependency) {
		t.Fatalf("requeue after a dead upstream task: %v; want ErrDependency", err)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task"); n != before {
		t.Fatalf("%d tasks after the refused requeue, want %d", n, before)
	}
	if l := links(t, s, d); l.To != 0 {
		t.Fatalf("refused requeue linked the task to %d", l.To)
	}
}
