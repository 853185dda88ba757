package mysqldriver_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/internal/testwait"
)

// galeraDiamondRounds is how many diamonds TestDiamondReleasedWhenUpstreams
// FinishOnTwoNodes finishes (before the fix 12–13 of 20 stayed blocked).
const galeraDiamondRounds = 20

// On a multi-writer Galera cluster, D runs after U1 and U2, and U1 and U2
// succeed at the same moment, U1's finish on node 1 and U2's on node 2.
// Each transaction settles its own edge and reads the other edge as it is
// on its own node: unsettled. Without a write both make, certification
// lets both commit (it sees no write-write conflict) and neither releases
// D, which stays blocked for ever (issue #22, break 3b: a write skew). Each
// settle of an upstream task writes the blocked downstream row itself
// (DepRelease), so the two finishes conflict on D's row, one is rolled back
// at certification and, run again, reads the other's edge settled and
// releases D. The test counts the diamonds left blocked. (The one-trip
// pool is offered, as OpenDB does, and not used on Galera: galera.go; with
// it, one finish in a few hundred was answered committed and lost, its task
// left running and D blocked.)
func TestDiamondReleasedWhenUpstreamsFinishOnTwoNodes(t *testing.T) {
	db := testdb.GaleraCluster(t).NewDatabase(t) // holds the cluster lock (shared) until t ends
	a := openStore(t, db.DSN(1), true)
	b := openStore(t, db.DSN(2), true)
	t.Cleanup(func() {
		if t.Failed() {
			logNodeStates(t, db.DSNs())
		}
	})
	stuck := 0
	for round := range galeraDiamondRounds {
		if diamondStuck(t, a, b, storage.Millis(1000*(round+1))) {
			stuck++
		}
	}
	if stuck > 0 {
		t.Fatalf("%d of %d diamonds stayed blocked after both upstream tasks succeeded (finished at once on two nodes)", stuck, galeraDiamondRounds)
	}
}

// galeraRoundBound bounds one round of the diamond test. A round takes
// about 40 ms on an idle machine; one in a loaded make test ran out of 20 s
// with no word of where it waited (the node states are now logged when the
// test fails).
const galeraRoundBound = 60 * time.Second

// diamondStuck runs one round: U1, U2 claimed through a, D after both
// submitted through a; once node 2 sees all of it, U1 finishes through a
// and U2 through b at once. It reports whether D is still blocked once
// both finishes are visible on node 1.
func diamondStuck(t *testing.T, a, b *storage.Store, now storage.Millis) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), galeraRoundBound)
	defer cancel()
	u1 := claimedTask(t, a, "u1", "w1", now)
	u2 := claimedTask(t, a, "u2", "w2", now)
	group := []storage.DependentTask{{Task: depTask("d", now), After: []int64{u1.ID, u2.ID}}}
	if err := a.InsertDependent(ctx, group, now); err != nil {
		t.Fatal(err)
	}
	d := group[0].Task.ID
	waitFor(ctx, t, b, "node 2 to see the diamond", func(s *storage.Store) (bool, error) {
		ups, err := s.Upstream(ctx, d)
		if err != nil || len(ups) != 2 {
			return false, err
		}
		return ups[0].State == storage.StateRunning && ups[1].State == storage.StateRunning, nil
	})
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, f := range []struct {
		s  *storage.Store
		ct *storage.Task
	}{{a, u1}, {b, u2}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ferrs, err := f.s.FinishBatchAsIs(ctx, []storage.Finishing{succeed(f.ct, now+100)}, now+100)
			errs[i] = errors.Join(err, errors.Join(ferrs...))
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("finishing U1 and U2 on two nodes (%s): %v", time.Since(began), err)
	}
	what := fmt.Sprintf("node 1 to see both finishes (U1 %d, U2 %d, D %d; the finishes returned in %s)", u1.ID, u2.ID, d, time.Since(began))
	waitFor(ctx, t, a, what, func(s *storage.Store) (bool, error) {
		ups, err := s.Upstream(ctx, d)
		if err != nil || len(ups) != 2 {
			return false, err
		}
		return ups[0].State == storage.StateSucceeded && ups[1].State == storage.StateSucceeded, nil
	})
	row, err := a.Get(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	switch row.State {
	case storage.StateBlocked:
		return true
	case storage.StatePending:
		return false
	}
	t.Fatalf("task %d after both its upstream tasks succeeded: %s, want pending", d, row.State)
	return false
}

// waitFor polls cond on s until it holds, failing the test when ctx ends
// (testwait.For, bounded by ctx's deadline).
func waitFor(ctx context.Context, t *testing.T, s *storage.Store, what string, cond func(*storage.Store) (bool, error)) {
	t.Helper()
	deadline, ok := ctx.Deadline()
	if !ok {
		t.Fatalf("waitFor(%s): ctx has no deadline", what)
	}
	testwait.For(t, time.Until(deadline), what, func() bool {
		ok, err := cond(s)
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		return ok
	})
}

// logNodeStates logs, for each node of a failed Galera test, its wsrep
// state, its receive queue and whether flow control paused it, and the
// rows of argo_task as that node sees them.
func logNodeStates(t *testing.T, dsns []string) {
	for i, dsn := range dsns {
		db, err := sql.Open("mysql", strings.TrimPrefix(dsn, "mysql:"))
		if err != nil {
			t.Logf("node %d: %v", i+1, err)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		status := map[string]string{}
		rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state_comment', 'wsrep_cluster_status', 'wsrep_local_recv_queue', 'wsrep_flow_control_paused', 'wsrep_local_bf_aborts', 'wsrep_local_cert_failures')")
		for err == nil && rows.Next() {
			var k, v string
			if err = rows.Scan(&k, &v); err == nil {
				status[k] = v
			}
		}
		var tasks []string
		if err == nil {
			var trows *sql.Rows
			trows, err = db.QueryContext(ctx, "SELECT CONCAT(id, ':', task_status, '/', lease_owner) FROM argo_task ORDER BY id DESC LIMIT 6")
			for err == nil && trows.Next() {
				var row string
				if err = trows.Scan(&row); err == nil {
					tasks = append(tasks, row)
				}
			}
		}
		t.Logf("node %d: %v; last tasks (id:state/owner) %v; err %v", i+1, status, tasks, err)
		cancel()
		db.Close()
	}
}
