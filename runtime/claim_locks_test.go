package runtime

import (
	"context"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
)

// On MariaDB a 10-row claim of one shard, with 40 due rows in 4 shards,
// locks only the 10 rows it takes (counted by probing each row from another
// connection with SELECT … FOR UPDATE NOWAIT: MariaDB's INNODB_TRX.trx_rows_locked
// is not a row count, it reports 80 for a one-row UPDATE here). The claim's statements are run here
// on one connection with the transaction left open, to count its locks: the
// plain read of candidates, then claimFenceSQL per candidate, as claimMySQL
// and execRowwise send them. For comparison the log gives the count of the
// locking read the claim used before (SELECT … FOR UPDATE SKIP LOCKED).
func TestClaimLocksOnlyRowsItTakes(t *testing.T) {
	s := openTestStore(t, testdb.MySQLDSN(t))
	ctx := context.Background()
	var all []int64
	for i := range 40 {
		task := sampleTask("l", StatePending, Millis(100+i), i%4)
		mustInsert(t, s, task)
		all = append(all, task.ID)
	}
	where := "due_at <= ? AND lease_until <= ? AND ((task_id IN (?) AND shard_key IN (?)))"
	args := []any{Millis(1000), Millis(1000), "l", 3}
	rowsLocked := func(lockingRead bool) int {
		conn, err := s.db.Connx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, q := range []string{"SET TRANSACTION ISOLATION LEVEL READ COMMITTED", "START TRANSACTION"} {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		defer conn.ExecContext(ctx, "ROLLBACK")
		q := "SELECT " + taskColumns + " FROM argo_task WHERE " + where + " ORDER BY due_at LIMIT ?"
		if lockingRead {
			q += " FOR UPDATE SKIP LOCKED"
		}
		var cands []*Task
		if err := conn.SelectContext(ctx, &cands, q, append(args, 10)...); err != nil {
			t.Fatal(err)
		}
		if len(cands) != 10 {
			t.Fatalf("%d candidates, want 10", len(cands))
		}
		if !lockingRead {
			for _, c := range cands {
				res, err := conn.ExecContext(ctx, s.claimFenceSQL(), "me", Millis(5000), Millis(1000), c.ID, c.State, c.ExecuteTimes, Millis(1000), Millis(1000))
				if err != nil {
					t.Fatal(err)
				}
				if n, _ := res.RowsAffected(); n != 1 {
					t.Fatalf("candidate %d not taken", c.ID)
				}
			}
		}
		// Probe every row from another connection: a row lock held by the
		// claim makes a locking read of that row fail at once.
		locked := 0
		for _, id := range all {
			var got int64
			err := s.db.QueryRowContext(ctx, "SELECT id FROM argo_task WHERE id = ? FOR UPDATE NOWAIT", id).Scan(&got)
			switch {
			case err == nil:
			case isRetryableLockError(err) || strings.Contains(err.Error(), "3572"):
				locked++
			default:
				t.Fatal(err)
			}
		}
		return locked
	}
	before := rowsLocked(true)
	after := rowsLocked(false)
	t.Logf("a 10-row claim of one shard of 4 (40 due rows): the locking read locks %d rows; the claim (plain read, fenced UPDATEs by primary key) locks %d", before, after)
	if after > 10 {
		t.Fatalf("the claim locks %d rows, want at most the 10 it takes", after)
	}
}
