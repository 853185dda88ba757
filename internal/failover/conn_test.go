package failover

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// TestConnKeepsDriverInterfaces: through the wrapper, sql.Conn.Raw sees a
// connection with every optional interface of the driver's, a
// multi-statement Exec returns the driver's own result (per-statement row
// counts, as argo's one-round-trip finish reads them), Unwrap gives the
// driver's connection, and prepared statements, transactions at an
// isolation level and Ping work.
func TestConnKeepsDriverInterfaces(t *testing.T) {
	srv := startServers(t, 2)
	adminExec(t, srv[0], "CREATE DATABASE probe")
	adminExec(t, srv[0], "CREATE TABLE probe.t (id INT PRIMARY KEY, v INT)")
	db, _ := openList(t, listDSN(t, srv, "probe?multiStatements=true"), testOptions(t))
	ctx := ctxT(t, time.Minute)
	sc, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	err = sc.Raw(func(dc any) error {
		for name, ok := range map[string]bool{
			"ExecerContext":      is[driver.ExecerContext](dc),
			"QueryerContext":     is[driver.QueryerContext](dc),
			"ConnBeginTx":        is[driver.ConnBeginTx](dc),
			"ConnPrepareContext": is[driver.ConnPrepareContext](dc),
			"NamedValueChecker":  is[driver.NamedValueChecker](dc),
			"Pinger":             is[driver.Pinger](dc),
			"SessionResetter":    is[driver.SessionResetter](dc),
			"Validator":          is[driver.Validator](dc),
		} {
			if !ok {
				t.Errorf("the wrapped connection is no driver.%s", name)
			}
		}
		res, err := dc.(driver.ExecerContext).ExecContext(ctx, "INSERT INTO t VALUES (1, 1), (2, 2); UPDATE t SET v = 3 WHERE id = 1; UPDATE t SET v = 4 WHERE id > 5", nil)
		if err != nil {
			return err
		}
		mr, ok := res.(mysql.Result)
		if !ok {
			t.Fatalf("multi-statement result %T, want the driver's mysql.Result", res)
		}
		if got := mr.AllRowsAffected(); len(got) != 3 || got[0] != 2 || got[1] != 1 || got[2] != 0 {
			t.Errorf("rows affected per statement %v, want [2 1 0]", got)
		}
		un, ok := dc.(interface{ Unwrap() driver.Conn })
		if !ok {
			t.Fatal("the wrapped connection has no Unwrap")
		}
		if _, wrapped := un.Unwrap().(*conn); wrapped || !is[driver.ExecerContext](un.Unwrap()) {
			t.Errorf("Unwrap returned %T, want the driver's connection", un.Unwrap())
		}
		return dc.(driver.Pinger).Ping(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}

	// Server-side prepared statements (interpolateParams off), a
	// transaction at an isolation level, the NamedValueChecker (a
	// time.Time argument).
	stmt, err := sc.PrepareContext(ctx, "SELECT v FROM t WHERE id = ? AND NOW() > ?")
	if err != nil {
		t.Fatal(err)
	}
	var v int
	if err := stmt.QueryRowContext(ctx, 1, time.Unix(0, 0)).Scan(&v); err != nil || v != 3 {
		t.Errorf("prepared query: %d, %v", v, err)
	}
	if _, err := stmt.ExecContext(ctx, 2, time.Unix(0, 0)); err != nil {
		t.Errorf("prepared exec: %v", err)
	}
	stmt.Close()
	tx, err := sc.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE t SET v = 5 WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := sc.PingContext(context.Background()); err != nil {
		t.Error(err)
	}
}

func is[T any](v any) bool { _, ok := v.(T); return ok }
