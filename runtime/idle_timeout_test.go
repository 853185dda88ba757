package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
)

// argo's MySQL sessions close after MySQLIdleTimeoutDefault without a
// word from their client (wait_timeout, 8 hours by MySQL's default) unless
// the DSN sets its own; a value that is not whole seconds is refused with
// what to write.
func TestMySQLSessionIdleTimeout(t *testing.T) {
	dsn := testdb.MySQLDSN(t)
	waitTimeout := func(dsn string) int {
		t.Helper()
		db, _, err := OpenDB(dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRowContext(context.Background(), "SELECT @@SESSION.wait_timeout").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got, want := waitTimeout(dsn), int(MySQLIdleTimeoutDefault.Seconds()); got != want {
		t.Errorf("wait_timeout of argo's session: %d s, want MySQLIdleTimeoutDefault %d s", got, want)
	}
	if got := waitTimeout(dsn + "&wait_timeout=7"); got != 7 {
		t.Errorf("wait_timeout with the DSN's wait_timeout=7: %d s, want 7", got)
	}
	for _, bad := range []string{"0", "1.5", "1m"} {
		if _, _, err := OpenDB(dsn + "&wait_timeout=" + bad); err == nil || !strings.Contains(err.Error(), "whole number of seconds") {
			t.Errorf("wait_timeout=%s: %v, want a refusal saying to write whole seconds", bad, err)
		}
	}
}

// A dependent submit whose INSERT's answer is lost leaves, on the server, a
// session in the middle of its transaction holding its upstream task's row
// (the submit marked it has_downstream); its client gave the connection up
// (the submit answered not persisted). Until the server closes that
// session nothing else may write the row: the upstream task's finish waits,
// and with MySQL's default wait_timeout (8 hours) it waited
// innodb_lock_wait_timeout again and again (fault checker, MariaDB seed
// 175442727225875: the rescue of its lease and every order key behind it
// stalled). The session's wait_timeout bounds it: here 2 s from the DSN.
func TestCutOffTransactionReleasesItsLocks(t *testing.T) {
	dsn := testdb.MySQLDSN(t)
	direct := openTestStore(t, dsn)
	proxy := testdb.NewFaultProxy(t, dsn)
	cut := openTestStore(t, proxy.DSN(dsn)+"&wait_timeout=2")
	ctx := context.Background()
	now := toMillis(time.Now())
	up := sampleTask("idle.up", StatePending, now, 0)
	mustInsert(t, direct, up)
	claimed, err := direct.ClaimByID(ctx, up.ID, up.ShardKey, StatePending, "w", now, now+600_000)
	if err != nil || claimed == nil {
		t.Fatalf("claim: %+v, %v", claimed, err)
	}
	proxy.CutAnswer("INSERT INTO argo_task (", 1)
	down := []storage.DependentTask{{Task: sampleTask("idle.down", StatePending, now, 0), After: []int64{up.ID}}}
	if err := cut.InsertDependent(ctx, down, now); err == nil {
		t.Fatal("the dependent submit whose INSERT answer was cut succeeded")
	}
	if proxy.Cuts() != 1 {
		t.Fatalf("%d answers cut, want 1", proxy.Cuts())
	}
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	f := storage.Finishing{Fence: storage.Fence{ID: claimed.ID, Shard: claimed.ShardKey, Owner: claimed.LeaseOwner, Attempt: claimed.ExecuteTimes, From: claimed.State},
		To: StateSucceeded, Due: claimed.ExecuteTime,
		History: &storage.Attempt{TaskPK: claimed.ID, Attempt: claimed.ExecuteTimes, Kind: "attempt", Worker: "w", StartedAt: now, FinishedAt: now, Outcome: argotype.OutcomeSucceeded}}
	if err := direct.FinishAsIs(fctx, f, now); err != nil {
		t.Fatalf("the upstream task's finish after %s: %v (the cut-off session still holds its row)", time.Since(start).Round(time.Millisecond), err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the upstream task's finish waited %s for the cut-off session, want about its wait_timeout (2 s)", took.Round(time.Millisecond))
	}
	if got, _ := direct.Get(ctx, up.ID); got.State != StateSucceeded {
		t.Fatalf("upstream task %d is %s, want succeeded", up.ID, got.State)
	}
}
