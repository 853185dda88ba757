package failover

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// startWith restarts a private server with more mariadbd options.
func startWith(t *testing.T, s *testdb.MySQLServer, args string) {
	t.Helper()
	s.Stop(t)
	t.Setenv("ARGO_MARIADB_EXTRA_ARGS", args)
	s.Start(t)
	t.Setenv("ARGO_MARIADB_EXTRA_ARGS", "")
}

// countOn counts the rows of repl_probe.t on one server directly.
func countOn(t *testing.T, s *testdb.MySQLServer) int {
	t.Helper()
	db, err := sql.Open("mysql", s.ServerDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM repl_probe.t").Scan(&n); err != nil {
		return -1
	}
	return n
}

// TestPrimaryReplicaPair runs the connector on a real MariaDB primary and
// its replica (binlog replication, the replica read_only=ON): writes go to
// the primary and reach the replica; with the primary SIGKILLed they are
// refused (the replica is read-only) until the replica is promoted, then go
// to it; the old primary, restarted writable, gets none of them — every row
// written through the connector is on the promoted replica, and the old
// primary has only those written before it died.
func TestPrimaryReplicaPair(t *testing.T) {
	srv := startServers(t, 2)
	primary, replica := srv[0], srv[1]
	primaryArgs := "--log-bin=mysql-bin --server-id=1 --binlog-format=ROW"
	startWith(t, primary, primaryArgs)
	startWith(t, replica, "--server-id=2 --read-only=ON")
	adminExec(t, replica, "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT="+portOfServer(t, primary)+", MASTER_USER='root', MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos")
	adminExec(t, replica, "START SLAVE")

	opts := testOptions(t)
	db, fc := openList(t, listDSN(t, srv, ""), opts)
	ctx := ctxT(t, 3*time.Minute)
	insert := func(from, to int) error {
		for i := from; i <= to; i++ {
			if _, err := db.ExecContext(ctx, "INSERT INTO repl_probe.t (id, port) VALUES (?, @@port)", i); err != nil {
				return err
			}
		}
		return nil
	}
	for _, q := range []string{"CREATE DATABASE repl_probe", "CREATE TABLE repl_probe.t (id INT PRIMARY KEY, port INT NOT NULL)"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := insert(1, 50); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the replica to have the primary's 50 rows", func() bool { return countOn(t, replica) == 50 })

	primary.Kill(t)
	waitFor(t, 30*time.Second, "writes to be refused, the replica named read-only", func() bool {
		err := insert(1000, 1000)
		var ns *NoServerError
		return errors.As(err, &ns) && strings.Contains(ns.Reasons[1], "read_only=ON")
	})
	for _, q := range []string{"STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = OFF"} { // promoted
		adminExec(t, replica, q)
	}
	waitFor(t, 30*time.Second, "writes to go to the promoted replica", func() bool { return insert(51, 51) == nil })
	if err := insert(52, 100); err != nil {
		t.Fatal(err)
	}

	t.Setenv("ARGO_MARIADB_EXTRA_ARGS", primaryArgs)
	primary.Start(t) // the old primary is back, writable
	t.Setenv("ARGO_MARIADB_EXTRA_ARGS", "")
	waitFor(t, 30*time.Second, "the old primary to be seen up and writable", func() bool { return fc.servers[0].usable() })
	// Every round of checks from here could fail back: write through ten.
	last := 100
	for end := time.Now().Add(10 * opts.CheckInterval); time.Now().Before(end); {
		last++
		if err := insert(last, last); err != nil {
			t.Fatal(err)
		}
	}
	onOld, onNew := countOn(t, primary), countOn(t, replica)
	var stray int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM repl_probe.t WHERE port <> ?", portOfServer(t, replica)).Scan(&stray); err != nil {
		t.Fatal(err)
	}
	t.Logf("rows: %d on the old primary, %d on the promoted replica (%d of them written by the old primary before it died)", onOld, onNew, stray)
	if onNew != last || onOld != 50 {
		t.Errorf("the promoted replica has %d rows, the old primary %d; want %d and 50 (no write after the kill on the old primary)", onNew, onOld, last)
	}
}
