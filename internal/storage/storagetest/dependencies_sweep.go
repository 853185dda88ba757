package storagetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// depSweep: the backstop of lost releases (Store.BlockedBatch and
// SettleBlocked, run by maintenance.BlockedSweeper). The rows are put, by
// hand, in the states a lost step leaves (a multi-writer Galera cluster can
// leave them so): a blocked task whose edges are all settled succeeded; one
// whose edge is unsettled though its upstream task succeeded (a submit on
// one node racing the finish on another); one after a dead upstream task,
// not skipped, with a blocked task after it; one after a skipped task. A
// sweep in batches of 2 settles each as the finish would have, and leaves a
// task whose upstream task still runs, and a blocked task modified after
// the sweep's cutoff, alone.
func depSweep(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	db := dbx(s)
	set := func(id int64, st storage.State) {
		t.Helper()
		if _, err := db.Exec("UPDATE argo_task SET task_status = ?, gmt_modified = 100 WHERE id = ?", st, id); err != nil {
			t.Fatal(err)
		}
	}
	edge := func(task, up int64, outcome int) {
		t.Helper()
		if _, err := db.Exec("UPDATE argo_task_dep SET upstream_outcome = ? WHERE task_pk = ? AND upstream_pk = ?", outcome, task, up); err != nil {
			t.Fatal(err)
		}
	}
	blocked := storage.StateBlocked
	// Lost release: U1 and U2 succeeded, both edges settled, D blocked.
	g := submitGroup(t, s, group(100, []string{"a", "a", "c"}, map[int][]int{2: {0, 1}}), 100)
	lostU1, lostU2, lostD := g[0], g[1], g[2]
	set(lostU1, succeeded)
	set(lostU2, succeeded)
	edge(lostD, lostU1, storage.UpstreamSucceeded)
	edge(lostD, lostU2, storage.UpstreamSucceeded)
	set(lostD, blocked)
	// Submit racing the finish: U succeeded, the edge written unsettled.
	g = submitGroup(t, s, group(100, []string{"a", "c"}, map[int][]int{1: {0}}), 100)
	raceU, raceD := g[0], g[1]
	set(raceU, recovered)
	set(raceD, blocked)
	// Lost skip: U dead, D after it and E after D still blocked.
	g = submitGroup(t, s, group(100, []string{"a", "c", "d"}, map[int][]int{1: {0}, 2: {1}}), 100)
	deadU, deadD, deadE := g[0], g[1], g[2]
	set(deadU, dead)
	set(deadD, blocked)
	set(deadE, blocked)
	// After a skipped task: U dead, S after it skipped, D after S blocked.
	g = submitGroup(t, s, group(100, []string{"a", "b", "c"}, map[int][]int{1: {0}, 2: {1}}), 100)
	skipU, skipS, skipD := g[0], g[1], g[2]
	set(skipU, dead)
	edge(skipS, skipU, storage.UpstreamFailed)
	set(skipS, storage.StateSkipped)
	set(skipD, blocked)
	// Still waiting: U runs.
	g = submitGroup(t, s, group(100, []string{"a", "c"}, map[int][]int{1: {0}}), 100)
	waitU, waitD := g[0], g[1]
	set(waitU, running)
	set(waitD, blocked)
	// Too fresh for this sweep: U succeeded, D blocked, modified at the cutoff.
	g = submitGroup(t, s, group(100, []string{"a", "c"}, map[int][]int{1: {0}}), 100)
	freshU, freshD := g[0], g[1]
	set(freshU, succeeded)
	set(freshD, blocked)
	if _, err := db.Exec("UPDATE argo_task SET gmt_modified = 5000 WHERE id = ?", freshD); err != nil {
		t.Fatal(err)
	}

	var cur storage.BlockedCursor
	seen, settled := 0, 0
	for {
		batch, err := s.BlockedBatch(ctx, 5000, cur, 2)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]int64, len(batch))
		for i, b := range batch {
			ids[i] = b.ID
		}
		n, err := s.SettleBlocked(ctx, ids, 6000)
		if err != nil {
			t.Fatal(err)
		}
		seen, settled = seen+len(batch), settled+n
		if len(batch) < 2 {
			break
		}
		cur = batch[len(batch)-1]
	}
	// lostD, raceD, deadD, deadE, skipD, waitD: freshD is past the cutoff.
	if seen != 6 || settled != 4 {
		t.Fatalf("the sweep read %d blocked tasks and settled %d, want 6 and 4 (deadE is skipped with deadD, not counted)", seen, settled)
	}
	wantStates(t, s, "after the sweep", map[int64]storage.State{
		lostD: pending, raceD: pending, deadD: storage.StateSkipped, deadE: storage.StateSkipped,
		skipD: storage.StateSkipped, waitD: blocked, freshD: blocked, waitU: running,
	})
	for id, want := range map[int64]string{
		deadD: fmt.Sprintf("upstream task %d failed", deadU), deadE: fmt.Sprintf("upstream task %d failed", deadU),
		skipD: storage.UpstreamSkippedReason(skipS),
	} {
		if got := get(t, s, id).ErrorMsg; !strings.HasPrefix(got, want) {
			t.Fatalf("task %d skipped with %q, want %q", id, got, want)
		}
	}
	if row := get(t, s, raceD); row.GmtModified != 6000 {
		t.Fatalf("released task's gmt_modified %d, want 6000 (the sweep's time)", row.GmtModified)
	}
	if ups, err := s.Upstream(ctx, raceD); err != nil || len(ups) != 1 || ups[0].Outcome != storage.UpstreamSucceeded {
		t.Fatalf("released task's edge: %+v, %v; want settled succeeded", ups, err)
	}
	// A second sweep changes nothing.
	n, err := s.SettleBlocked(ctx, []int64{lostD, raceD, deadD, skipD, waitD}, 7000)
	if err != nil || n != 0 {
		t.Fatalf("second sweep settled %d, %v; want 0", n, err)
	}
}
