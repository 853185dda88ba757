package failover

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"github.com/go-sql-driver/mysql"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFailoverAndBack: connections go to the first listed server; when it
// is killed, to the second (pooled connections to the first leave the
// pool). The first, restarted writable, is never used again by this
// connector — not while the second serves, nor once the second is killed:
// it was replaced, and may be an old primary whose writes the second lacks.
// Connections are refused then, with a reason that says so; they go to the
// second again when it returns (with the same handle, no restart).
func TestFailoverAndBack(t *testing.T) {
	srv := startServers(t, 2)
	opts := testOptions(t)
	logs := recordLogs(t, &opts)
	db, fc := openList(t, listDSN(t, srv, ""), opts)
	db.SetMaxIdleConns(8)
	ctx := ctxT(t, 2*time.Minute)

	onAll := func(want string) func() bool {
		return func() bool {
			for i := 0; i < 16; i++ {
				port, err := portOf(ctx, db)
				if err != nil || port != want {
					return false
				}
			}
			return true
		}
	}
	if port, err := portOf(ctx, db); err != nil || port != portOfServer(t, srv[0]) {
		t.Fatalf("first query on port %s (%v), want the first server %s", port, err, portOfServer(t, srv[0]))
	}
	srv[0].Kill(t)
	waitFor(t, 30*time.Second, "queries to run on the second server", onAll(portOfServer(t, srv[1])))
	if fc.Current() != addrOf(t, srv[1]) {
		t.Errorf("Current() = %s, want %s", fc.Current(), addrOf(t, srv[1]))
	}
	srv[0].Start(t)
	waitFor(t, 30*time.Second, "the restarted server to be seen usable", func() bool { return fc.servers[0].usable() })
	srv[1].Kill(t)
	var last error
	waitFor(t, 30*time.Second, "queries to be refused, the first server named replaced", func() bool {
		var port string
		port, last = portOf(ctx, db)
		if last == nil && port == portOfServer(t, srv[0]) {
			t.Fatalf("a query ran on the replaced first server (port %s)", port)
		}
		var ns *NoServerError
		return errors.As(last, &ns) && strings.Contains(ns.Reasons[0], "replaced by "+addrOf(t, srv[1]))
	})
	t.Logf("refused: %v", last)
	srv[1].Start(t)
	waitFor(t, 30*time.Second, "queries to run on the second server again", onAll(portOfServer(t, srv[1])))

	var failovers int
	for _, l := range logs() {
		if strings.Contains(l, "argo: database failover") {
			failovers++
		}
	}
	if failovers != 1 {
		t.Errorf("%d failovers logged, want 1", failovers)
	}
}

// TestStaysOnCurrentServer: after a failover the connector keeps the
// server it moved to while that one stays usable, even once the first
// listed server is back: no failback to a replaced server.
func TestStaysOnCurrentServer(t *testing.T) {
	srv := startServers(t, 2)
	db, fc := openList(t, listDSN(t, srv, ""), testOptions(t))
	ctx := ctxT(t, 2*time.Minute)
	if _, err := portOf(ctx, db); err != nil {
		t.Fatal(err)
	}
	srv[0].Stop(t)
	waitFor(t, 30*time.Second, "the second server to be current", func() bool {
		portOf(ctx, db)
		return fc.Current() == addrOf(t, srv[1])
	})
	srv[0].Start(t)
	waitFor(t, 30*time.Second, "the first server to be seen usable", func() bool { return fc.servers[0].usable() })
	for i := 0; i < 50; i++ {
		conn, err := db.Conn(ctx) // a new connection each time the pool has none idle
		if err != nil {
			t.Fatal(err)
		}
		port, err := portOf(ctx, conn)
		conn.Raw(func(any) error { return driver.ErrBadConn }) // not pooled: the next is new
		conn.Close()
		if err != nil || port != portOfServer(t, srv[1]) {
			t.Fatalf("connection %d after the first server came back: port %s (%v), want the current server's %s", i, port, err, portOfServer(t, srv[1]))
		}
	}
}

// TestReadOnlyServerNotUsed: a server with read_only=1 is not chosen, and
// one made read-only while in use is left (its pooled connections too) for
// a writable one.
func TestReadOnlyServerNotUsed(t *testing.T) {
	srv := startServers(t, 2)
	adminExec(t, srv[0], "SET GLOBAL read_only = 1")
	opts := testOptions(t)
	logs := recordLogs(t, &opts)
	db, _ := openList(t, listDSN(t, srv, ""), opts)
	db.SetMaxIdleConns(4)
	ctx := ctxT(t, 2*time.Minute)
	if port, err := portOf(ctx, db); err != nil || port != portOfServer(t, srv[1]) {
		t.Fatalf("first query on port %s (%v), want the writable second server %s", port, err, portOfServer(t, srv[1]))
	}
	if !slices.ContainsFunc(logs(), func(l string) bool {
		return strings.Contains(l, "unusable server="+addrOf(t, srv[0])) && strings.Contains(l, "read-only (read_only=ON)")
	}) {
		t.Errorf("no log line says the first server is read-only: %q", logs())
	}
	// Make the second read-only and the first writable: the connector
	// moves, and no pooled connection stays on the second.
	adminExec(t, srv[0], "SET GLOBAL read_only = 0")
	adminExec(t, srv[1], "SET GLOBAL read_only = 1")
	waitFor(t, 30*time.Second, "every query to run on the first server", func() bool {
		for i := 0; i < 8; i++ {
			if port, err := portOf(ctx, db); err != nil || port != portOfServer(t, srv[0]) {
				return false
			}
		}
		return true
	})
}

// TestPooledConnectionsLeave: connections pooled on a server that stops
// being usable are not handed out again, also those idle in the pool and
// those held by callers when it happened.
func TestPooledConnectionsLeave(t *testing.T) {
	srv := startServers(t, 2)
	opts := testOptions(t)
	db, fc := openList(t, listDSN(t, srv, ""), opts)
	const n = 6
	db.SetMaxIdleConns(n)
	ctx := ctxT(t, 2*time.Minute)
	// n connections on the first server: half idle, half held.
	var conns []*sql.Conn
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if port, err := portOf(ctx, c); err != nil || port != portOfServer(t, srv[0]) {
			t.Fatalf("port %s (%v), want the first server", port, err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns[:n/2] {
		c.Close()
	}
	adminExec(t, srv[0], "SET GLOBAL read_only = 1")
	waitFor(t, 30*time.Second, "the second server to be current", func() bool { return fc.Current() == addrOf(t, srv[1]) })
	idle := db.Stats().Idle
	for _, c := range conns[n/2:] {
		c.Close()
	}
	if after := db.Stats().Idle; after != idle {
		t.Errorf("%d connections held on the first server were pooled when released after the switch", after-idle)
	}
	// Take n connections at once: none may be an old one.
	var held []*sql.Conn
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		if port, err := portOf(ctx, c); err != nil || port != portOfServer(t, srv[1]) {
			t.Errorf("a connection after the switch runs on port %s (%v), want the second server %s", port, err, portOfServer(t, srv[1]))
		}
	}
	for _, c := range held {
		c.Close()
	}
}

// TestNoServerUsable: with every server down a connection fails with an
// error naming each server and why; it succeeds again once one is back,
// without waiting for a health check.
func TestNoServerUsable(t *testing.T) {
	srv := startServers(t, 2)
	opts := testOptions(t)
	opts.CheckInterval = time.Hour // only Connect itself may find the server back
	db, _ := openList(t, listDSN(t, srv, ""), opts)
	ctx := ctxT(t, 2*time.Minute)
	if _, err := portOf(ctx, db); err != nil {
		t.Fatal(err)
	}
	srv[0].Stop(t)
	srv[1].Stop(t)
	_, err := portOf(ctx, db)
	var nse *NoServerError
	if !errors.As(err, &nse) {
		t.Fatalf("with every server down: %v, want a *NoServerError", err)
	}
	for _, s := range srv {
		if want := addrOf(t, s) + ": dial tcp"; !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	srv[1].Start(t)
	if port, err := portOf(ctx, db); err != nil || port != portOfServer(t, srv[1]) {
		t.Errorf("after the second server came back: port %s (%v)", port, err)
	}
}

// TestReadOnlyAnswerChecksAtOnce: a write refused because the server became
// read-only (1290) has the servers checked at once, not at the next round:
// the next write goes to a writable server.
func TestReadOnlyAnswerChecksAtOnce(t *testing.T) {
	srv := startServers(t, 2)
	for _, s := range srv {
		adminExec(t, s, "CREATE DATABASE failover_probe")
		for _, host := range []string{"%", "localhost", "127.0.0.1"} {
			// Not root: read_only does not apply to SUPER.
			adminExec(t, s, "CREATE USER 'app'@'"+host+"' IDENTIFIED BY 'app-secret'")
			adminExec(t, s, "GRANT ALL ON failover_probe.* TO 'app'@'"+host+"'")
		}
	}
	opts := testOptions(t)
	opts.CheckInterval = time.Hour // no round but the first, unless asked
	logs := recordLogs(t, &opts)
	dsn := strings.Replace(listDSN(t, srv, "failover_probe"), "root@", "app:app-secret@", 1)
	db, fc := openList(t, dsn, opts)
	ctx := ctxT(t, 2*time.Minute)
	write := func() error {
		_, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS t (id INT)")
		if err == nil {
			_, err = db.ExecContext(ctx, "INSERT INTO t VALUES (1)")
		}
		return err
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the second server to be checked once", func() bool { return fc.servers[1].usable() })
	adminExec(t, srv[0], "SET GLOBAL read_only = 1")
	err := write()
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1290 {
		t.Fatalf("write on the read-only server: %v, want error 1290", err)
	}
	waitFor(t, 10*time.Second, "a write to succeed on the second server", func() bool { return write() == nil })
	if port, err := portOf(ctx, db); err != nil || port != portOfServer(t, srv[1]) {
		t.Errorf("after the refusal, port %s (%v), want the second server", port, err)
	}
	for _, l := range logs() {
		if strings.Contains(l, "app-secret") {
			t.Errorf("a log line shows the password: %s", l)
		}
	}
}

// TestProbeConnectionKilled: the health check's own connection killed on
// the server (KILL) is replaced without the server being taken for down.
func TestProbeConnectionKilled(t *testing.T) {
	srv := startServers(t, 2)
	opts := testOptions(t)
	logs := recordLogs(t, &opts)
	db, fc := openList(t, listDSN(t, srv, ""), opts)
	ctx := ctxT(t, time.Minute)
	if _, err := portOf(ctx, db); err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(0) // the only connection left to the first server is the health check's
	admin, err := sql.Open("mysql", srv[0].ServerDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	others := func() []int64 {
		rows, err := admin.QueryContext(ctx, "SELECT id FROM information_schema.processlist WHERE id <> CONNECTION_ID() AND command <> 'Daemon' AND user = 'root'")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var ids []int64
		for rows.Next() {
			var id int64
			rows.Scan(&id)
			ids = append(ids, id)
		}
		return ids
	}
	var killed []int64
	waitFor(t, 10*time.Second, "one connection (the health check's) on the first server", func() bool {
		killed = others()
		return len(killed) == 1
	})
	if _, err := admin.ExecContext(ctx, "KILL CONNECTION ?", killed[0]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a new health-check connection", func() bool {
		ids := others()
		return len(ids) == 1 && ids[0] != killed[0]
	})
	for _, l := range logs() {
		if strings.Contains(l, "unusable") {
			t.Errorf("the killed health-check connection was taken for the server down: %s", l)
		}
	}
	if fc.Current() != addrOf(t, srv[0]) {
		t.Errorf("moved to %s", fc.Current())
	}
}

// TestCallerDeadlineIsNoServerFailure: a connection attempt cut short by
// the caller's own deadline (a server slow to answer the handshake) does
// not mark the server unusable.
func TestCallerDeadlineIsNoServerFailure(t *testing.T) {
	// A server that accepts connections and never answers.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	opts := testOptions(t)
	opts.CheckTimeout = time.Minute // the health check does not conclude during the test
	opts.ConnectTimeout = time.Minute
	_, fc := openList(t, "root@tcp("+l.Addr().String()+",127.0.0.1:1)/", opts)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := fc.Connect(ctx); err == nil {
		t.Fatal("connected to a server that never answers")
	}
	if fc.servers[0].knownUnusable() {
		t.Errorf("the caller's deadline marked the server unusable: %s", fc.servers[0].reasonNow())
	}
}

// TestReasonsHidePassword: a server's error that quotes text equal to the
// password (here the refusal of a wrong password "denied": "Access denied
// for user …") is shown with the password replaced, in the error and in the
// logs.
func TestReasonsHidePassword(t *testing.T) {
	srv := startServers(t, 2)
	opts := testOptions(t)
	logs := recordLogs(t, &opts)
	dsn := strings.Replace(listDSN(t, srv, ""), "root@", "root:denied@", 1)
	db, _ := openList(t, dsn, opts)
	_, err := portOf(ctxT(t, time.Minute), db)
	if err == nil || !strings.Contains(err.Error(), "Error 1045") {
		t.Fatalf("wrong password: %v, want error 1045", err)
	}
	if strings.Contains(err.Error(), "denied") {
		t.Errorf("the error shows the password: %v", err)
	}
	for _, l := range logs() {
		if strings.Contains(l, "denied") {
			t.Errorf("a log line shows the password: %s", l)
		}
	}
}
