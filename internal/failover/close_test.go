package failover

import (
	"bytes"
	"github.com/go-sql-driver/mysql"
	"runtime"
	"strings"
	"testing"
	"time"
)

// goroutinesIn counts the goroutines whose stack holds fn.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		if strings.Contains(string(g), fn) {
			count++
		}
	}
	return count
}

// TestCloseLeavesNoGoroutine: after db.Close the health checks have stopped
// and their connections are closed (the driver's per-connection goroutine
// is gone), with one server up and one that never answers a connection.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	srv := startServers(t, 1)
	watchersBefore := goroutinesIn("go-sql-driver/mysql.(*mysqlConn).startWatcher")
	dsn := "root@tcp(" + addrOf(t, srv[0]) + ",127.0.0.1:1)/"
	db, fc := openList(t, dsn, testOptions(t))
	ctx := ctxT(t, time.Minute)
	if _, err := portOf(ctx, db); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the second server to be checked", func() bool { return fc.servers[1].knownUnusable() })
	if goroutinesIn("internal/failover.(*Connector).monitor") == 0 {
		t.Fatal("no health-check goroutine while the handle is open")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "no failover goroutine after Close", func() bool {
		return goroutinesIn("internal/failover.(*Connector)") == 0
	})
	t.Logf("watchers before %d, now %d", watchersBefore, goroutinesIn("go-sql-driver/mysql.(*mysqlConn).startWatcher"))
	waitFor(t, 10*time.Second, "the health-check connections to be closed", func() bool {
		return goroutinesIn("go-sql-driver/mysql.(*mysqlConn).startWatcher") <= watchersBefore
	})
}

// TestCloseBeforeUse: a connector closed before any connection starts no
// goroutine and refuses connections.
func TestCloseBeforeUse(t *testing.T) {
	dsn := "root@tcp(127.0.0.1:1,127.0.0.1:2)/"
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := ParseServerList(mc, dsn); err != nil {
		t.Fatal(err)
	}
	fc, err := newConnector(mc, serverAddresses(mc), testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { fc.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close of an unused connector did not return within 10s")
	}
	if _, err := fc.Connect(t.Context()); err == nil {
		t.Fatal("Connect after Close succeeded")
	}
	if n := goroutinesIn("internal/failover.(*Connector)"); n != 0 {
		t.Fatalf("%d failover goroutines after Close", n)
	}
}
