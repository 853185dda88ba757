package costgate

import (
	"context"
	"reflect"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
)

// TestSQLiteCounts: on SQLite every statement, BEGIN, COMMIT and ROLLBACK
// is a trip; a write outside a transaction is a commit; a prepare is not
// counted, the prepared statement's runs are; a statement that fails
// counts (it was sent).
func TestSQLiteCounts(t *testing.T) {
	c := NewCounter()
	db, err := OpenSQLite(testdb.SQLiteDSN(t), c)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx) // one connection: no second one opened behind the test's back
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	exec := func(q string, args ...any) {
		t.Helper()
		_, err := conn.ExecContext(ctx, q, args...)
		must(err)
	}
	exec("CREATE TABLE argo_task (id INTEGER PRIMARY KEY, a INTEGER)") // not a write: no commit
	exec("INSERT INTO argo_task (a) VALUES (?)", 1)                    // autocommit: a commit
	tx, err := conn.BeginTx(ctx, nil)
	must(err)
	_, err = tx.ExecContext(ctx, "UPDATE argo_task SET a = ? WHERE id = ?", 2, 1)
	must(err)
	st, err := tx.PrepareContext(ctx, "SELECT a FROM argo_task WHERE id = ?")
	must(err)
	for range 2 {
		var a int
		must(st.QueryRowContext(ctx, 1).Scan(&a))
	}
	must(st.Close())
	must(tx.Commit())
	tx, err = conn.BeginTx(ctx, nil)
	must(err)
	_, err = tx.ExecContext(ctx, "DELETE FROM argo_task WHERE id = ?", 1)
	must(err)
	must(tx.Rollback())
	if _, err := conn.ExecContext(ctx, "INSERT INTO no_such_table (a) VALUES (1)"); err == nil {
		t.Fatal("insert into a missing table succeeded")
	}
	got := c.Snapshot()
	// CREATE, INSERT, UPDATE, SELECT×2, DELETE, failed INSERT: 7
	// statements; with 2 BEGIN, 1 COMMIT, 1 ROLLBACK: 11 trips; the
	// autocommitted INSERTs (the failed one too) and the COMMIT: 3 commits.
	want := Counts{Statements: 7, Trips: 11, Commits: 3, Kinds: map[string]int64{
		"CREATE": 1, "INSERT argo_task": 1, "INSERT no_such_table": 1, "UPDATE argo_task": 1,
		"SELECT argo_task": 2, "DELETE argo_task": 1, "BEGIN": 2, "COMMIT": 1, "ROLLBACK": 1,
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("counts = %+v\nwant     %+v", got, want)
	}
}
