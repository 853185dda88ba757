package failover

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestInnodbReadOnlyServerNotUsed: a server started with innodb_read_only
// (as an Aurora reader runs), whose read_only is OFF, is not chosen: writes
// go to the writable server listed after it.
func TestInnodbReadOnlyServerNotUsed(t *testing.T) {
	srv := startServers(t, 2)
	srv[0].Stop(t)
	t.Setenv("ARGO_MARIADB_EXTRA_ARGS", "--innodb-read-only=ON")
	srv[0].Start(t)
	t.Setenv("ARGO_MARIADB_EXTRA_ARGS", "")
	db, _ := openList(t, listDSN(t, srv, ""), testOptions(t))
	ctx := ctxT(t, 2*time.Minute)
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS ro_probe"); err != nil {
		t.Fatalf("a write through the list: %v", err)
	}
	if port, err := portOf(ctx, db); err != nil || port != portOfServer(t, srv[1]) {
		t.Errorf("queries on port %s (%v), want the writable second server %s", port, err, portOfServer(t, srv[1]))
	}
}

// TestPromotedReplicaKeepsWrites: a primary and its replica (read_only=ON).
// While the primary serves, the replica is never used; when the primary
// dies, writes are refused until the replica is promoted (read_only=OFF),
// then go to it; the old primary, restarted writable, is never used again —
// not while the promoted one serves (no failback), nor when it dies too
// (writes are refused, naming the old primary replaced).
func TestPromotedReplicaKeepsWrites(t *testing.T) {
	srv := startServers(t, 2)
	primary, replica := srv[0], srv[1]
	adminExec(t, replica, "SET GLOBAL read_only = ON")
	opts := testOptions(t)
	db, fc := openList(t, listDSN(t, srv, ""), opts)
	db.SetMaxIdleConns(4)
	ctx := ctxT(t, 3*time.Minute)
	if port, err := portOf(ctx, db); err != nil || port != portOfServer(t, primary) {
		t.Fatalf("first query on port %s (%v), want the primary %s", port, err, portOfServer(t, primary))
	}
	primary.Kill(t)
	waitFor(t, 30*time.Second, "queries to be refused with the replica named read-only", func() bool {
		_, err := portOf(ctx, db)
		var ns *NoServerError
		return errors.As(err, &ns) && strings.Contains(ns.Reasons[1], "read_only=ON")
	})
	adminExec(t, replica, "SET GLOBAL read_only = OFF") // promoted
	waitFor(t, 30*time.Second, "queries to run on the promoted replica", func() bool {
		port, err := portOf(ctx, db)
		return err == nil && port == portOfServer(t, replica)
	})
	primary.Start(t) // the old primary is back, writable
	waitFor(t, 30*time.Second, "the old primary to be seen up and writable", func() bool { return fc.servers[0].usable() })
	// Every round of checks from here could fail back: watch ten of them.
	for end := time.Now().Add(10 * opts.CheckInterval); time.Now().Before(end); {
		if port, err := portOf(ctx, db); err != nil || port != portOfServer(t, replica) {
			t.Fatalf("with the old primary back: a query on port %s (%v), want the promoted replica %s", port, err, portOfServer(t, replica))
		}
	}
	replica.Kill(t)
	waitFor(t, 30*time.Second, "queries to be refused, the old primary named replaced", func() bool {
		port, err := portOf(ctx, db)
		if err == nil && port == portOfServer(t, primary) {
			t.Fatalf("a query ran on the replaced old primary (port %s)", port)
		}
		var ns *NoServerError
		return errors.As(err, &ns) && strings.Contains(ns.Reasons[0], "replaced by "+addrOf(t, replica))
	})
}
