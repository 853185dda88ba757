package failover

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/go-sql-driver/mysql"
)

// The Galera tests run on the cluster named by ARGO_TEST_GALERA_DSNS (the
// nodes' DSNs, comma-separated, as scripts/galera.sh env prints them). They
// take one node out of service at a time, holding ARGO_TEST_GALERA_LOCK.

// galeraNodes returns the nodes' driver DSNs (testdb.DisruptGaleraCluster:
// skipped, or failed under CI, without a cluster) and holds the cluster's
// disruption lock until the test ends.
func galeraNodes(t *testing.T) []string {
	t.Helper()
	return testdb.DisruptGaleraCluster(t).ServerDSNs()
}

// galeraNodesShared is galeraNodes with the disruption lock held shared:
// for a test that takes no node out of service but needs none taken out
// while it runs.
func galeraNodesShared(t *testing.T) []string {
	t.Helper()
	return testdb.GaleraCluster(t).ServerDSNs()
}

// electedIndex returns the index of the node the connector should write
// through: the usable one of the lowest rank, as the nodes last reported.
func electedIndex(t *testing.T, fc *Connector) int {
	t.Helper()
	best := -1
	for i, s := range fc.servers {
		if s.usable() && (best < 0 || s.rankNow() < fc.servers[best].rankNow()) {
			best = i
		}
	}
	if best < 0 {
		t.Fatal("no node is usable")
	}
	return best
}

// galeraList returns a DSN naming every node, in order, with the first
// node's user.
func galeraList(t *testing.T, nodes []string) (dsn string, addrs []string) {
	t.Helper()
	var user string
	for i, n := range nodes {
		mc, err := mysql.ParseDSN(n)
		if err != nil {
			t.Fatalf("node %d DSN: %v", i+1, err)
		}
		if i == 0 {
			user = mc.User
			if mc.Passwd != "" {
				user += ":" + mc.Passwd
			}
		}
		addrs = append(addrs, mc.Addr)
	}
	return user + "@tcp(" + strings.Join(addrs, ",") + ")/", addrs
}

// onNode runs a statement on one node directly.
func onNode(t *testing.T, node, query string) error {
	t.Helper()
	db, err := sql.Open("mysql", node)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = db.ExecContext(ctx, query)
	return err
}

// nodeCheck runs the health check on a new connection to one node.
func nodeCheck(t *testing.T, node string) (string, error) {
	t.Helper()
	mc, err := mysql.ParseDSN(node)
	if err != nil {
		t.Fatal(err)
	}
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := connector.Connect(ctx)
	if err != nil {
		return "", err
	}
	defer raw.Close()
	return checkServer(ctx, raw.(fullConn))
}

// waitSynced waits until a node reports itself usable again.
func waitSynced(t *testing.T, node string) {
	t.Helper()
	waitFor(t, 90*time.Second, "the node to be synced in the primary component again", func() bool {
		why, err := nodeCheck(t, node)
		return err == nil && why == ""
	})
}

// TestGaleraDesyncedNodeNotUsed: the writer (the node of the lowest rank)
// made a donor or desynced (wsrep_local_state 2) is left, with its pooled
// connections, for the next in rank, and used again once synced.
func TestGaleraDesyncedNodeNotUsed(t *testing.T) {
	nodes := galeraNodes(t)
	dsn, addrs := galeraList(t, nodes)
	opts := testOptions(t)
	db, fc := openList(t, dsn, opts)
	db.SetMaxIdleConns(4)
	ctx := ctxT(t, 3*time.Minute)
	if _, err := portOf(ctx, db); err != nil {
		t.Fatal(err)
	}
	w := electedIndex(t, fc)
	if fc.Current() != addrs[w] {
		t.Fatalf("first query on %s, want the node of the lowest rank %s", fc.Current(), addrs[w])
	}
	if err := onNode(t, nodes[w], "SET GLOBAL wsrep_desync = ON"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := onNode(t, nodes[w], "SET GLOBAL wsrep_desync = OFF"); err != nil {
			t.Errorf("node %d left desynced: %v", w+1, err)
		}
	})
	why, err := nodeCheck(t, nodes[w])
	if err != nil || !strings.Contains(why, "wsrep_local_state=2 (Donor/Desynced)") {
		t.Errorf("check of the desynced node: %q, %v; want it refused as Donor/Desynced", why, err)
	}
	waitFor(t, 30*time.Second, "the desynced node to be seen unusable", func() bool { return !fc.servers[w].usable() })
	next := electedIndex(t, fc)
	_, port2, _ := strings.Cut(addrs[next], ":")
	waitFor(t, 30*time.Second, "every query to run on the next node in rank", func() bool {
		for range 8 {
			if port, err := portOf(ctx, db); err != nil || port != port2 {
				return false
			}
		}
		return true
	})
	if err := onNode(t, nodes[w], "SET GLOBAL wsrep_desync = OFF"); err != nil {
		t.Fatal(err)
	}
	_, port1, _ := strings.Cut(addrs[w], ":")
	waitFor(t, 30*time.Second, "every query to run on the synced node again", func() bool {
		for range 8 {
			if port, err := portOf(ctx, db); err != nil || port != port1 {
				return false
			}
		}
		return true
	})
}

// TestGaleraNonPrimaryNode: the writer cut off from the others
// (non-primary component, wsrep_ready=OFF) answers 1047; the first such
// answer moves the connector to the next node in rank and drops the
// connections pooled on it, with no health-check round due (CheckInterval
// an hour). A straggler connection still open to the cut-off node cannot
// write: its INSERT is refused, and the transaction it had begun and
// written in before the cut fails to commit; neither row reaches the
// cluster.
func TestGaleraNonPrimaryNode(t *testing.T) {
	nodes := galeraNodes(t)
	dsn, addrs := galeraList(t, nodes)
	opts := testOptions(t)
	opts.CheckInterval = time.Hour
	db, fc := openList(t, dsn, opts)
	db.SetMaxIdleConns(4)
	ctx := ctxT(t, 3*time.Minute)
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	w := electedIndex(t, fc)
	// A node outside the primary component still answers statements that
	// read no table (SELECT @@port): read a table.
	for _, q := range []string{"CREATE DATABASE IF NOT EXISTS failover_probe", "CREATE TABLE IF NOT EXISTS failover_probe.one (id INT PRIMARY KEY)", "DELETE FROM failover_probe.one", "INSERT INTO failover_probe.one VALUES (1)"} {
		if err := onNode(t, nodes[w], q); err != nil {
			t.Fatal(err)
		}
	}
	portOf := func(ctx context.Context, db interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) (string, error) {
		var port string
		err := db.QueryRowContext(ctx, "SELECT @@port FROM failover_probe.one WHERE id = 1").Scan(&port)
		return port, err
	}
	var held []*sql.Conn
	for range 4 {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	for _, c := range held[1:] {
		if _, err := portOf(ctx, c); err != nil {
			t.Fatal(err)
		}
		c.Close() // 3 idle connections to the writer
	}
	straggler := held[0] // stays open across the cut
	defer straggler.Close()
	tx, err := straggler.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO failover_probe.one VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	if fc.Current() != addrs[w] {
		t.Fatalf("on %s, want the node of the lowest rank %s", fc.Current(), addrs[w])
	}

	if err := onNode(t, nodes[w], "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=1'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := onNode(t, nodes[w], "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=0'"); err != nil {
			t.Errorf("node %d left isolated: %v", w+1, err)
		}
		waitSynced(t, nodes[w])
	})
	waitFor(t, 60*time.Second, "the writer to answer 1047 (outside the primary component)", func() bool {
		var me *mysql.MySQLError
		return errors.As(onNode(t, nodes[w], "DO 1"), &me) && me.Number == 1047
	})
	why, err := nodeCheck(t, nodes[w])
	if err != nil || !strings.Contains(why, "wsrep_ready=OFF") {
		t.Errorf("check of the isolated node: %q, %v; want it refused for wsrep_ready=OFF", why, err)
	}
	if err := tx.Commit(); err == nil {
		t.Errorf("a transaction begun on the writer before it left the primary component committed after")
	} else {
		t.Logf("commit on the cut-off node: %v", err)
	}
	if _, err := straggler.ExecContext(ctx, "INSERT INTO failover_probe.one VALUES (2)"); err == nil {
		t.Errorf("an INSERT on a straggler connection to the cut-off node succeeded")
	} else {
		t.Logf("INSERT on the cut-off node: %v", err)
	}

	next := (w + 1) % len(nodes)
	for i := range nodes {
		if i != w && fc.servers[i].rankNow() < fc.servers[next].rankNow() {
			next = i
		}
	}
	_, port2, _ := strings.Cut(addrs[next], ":")
	failed := 0
	waitFor(t, 30*time.Second, "queries to run on the next node in rank", func() bool {
		port, err := portOf(ctx, db)
		if err != nil {
			failed++
			t.Logf("query failed: %v", err)
			return false
		}
		return port == port2
	})
	if failed > 1 {
		t.Errorf("%d queries failed before the connector left the cut-off node, want 1 (the first 1047 moves it)", failed)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM failover_probe.one WHERE id IN (2, 3)").Scan(&n); err != nil || n != 0 {
		t.Errorf("rows the cut-off node was asked to write, seen by the cluster: %d (%v), want 0", n, err)
	}
}

// TestGaleraUnusableStates is the decision table of galeraUnusable, on the
// status values a node reports in each state.
func TestGaleraUnusableStates(t *testing.T) {
	for _, c := range []struct {
		ready, cluster, state, comment string
		usable                         bool
	}{
		{"ON", "Primary", "4", "Synced", true},
		{"ON", "Primary", "2", "Donor/Desynced", false},
		{"ON", "Primary", "1", "Joining", false},
		{"OFF", "Primary", "1", "Joining: receiving State Transfer", false},
		{"ON", "Primary", "3", "Joined", false},
		{"OFF", "non-Primary", "0", "Initialized", false},
		{"ON", "non-Primary", "4", "Synced", false},
		{"OFF", "Primary", "4", "Synced", false},
		{"", "", "", "", false},
	} {
		why := galeraUnusable(map[string]string{"wsrep_ready": c.ready, "wsrep_cluster_status": c.cluster, "wsrep_local_state": c.state, "wsrep_local_state_comment": c.comment})
		if (why == "") != c.usable {
			t.Errorf("ready=%s cluster=%s state=%s (%s): %q, want usable=%v", c.ready, c.cluster, c.state, c.comment, why, c.usable)
		}
	}
}

// TestReadOnlyFlags: a server is not written to when any of its read-only
// settings is on — read_only, super_read_only (MySQL), innodb_read_only (a
// server started read-only, as an Aurora reader) — and each is named.
func TestReadOnlyFlags(t *testing.T) {
	for _, c := range []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{"read_only": "OFF", "wsrep_on": "OFF"}, ""},
		{map[string]string{"read_only": "OFF", "super_read_only": "OFF", "innodb_read_only": "OFF"}, ""},
		{map[string]string{"read_only": "ON"}, "read-only (read_only=ON)"},
		{map[string]string{"read_only": "OFF", "super_read_only": "ON"}, "read-only (super_read_only=ON)"},
		{map[string]string{"read_only": "OFF", "innodb_read_only": "ON"}, "read-only (innodb_read_only=ON)"},
		{map[string]string{"read_only": "0", "innodb_read_only": "1"}, "read-only (innodb_read_only=1)"},
	} {
		if got := readOnlyReason(c.vars); got != c.want {
			t.Errorf("%v: %q, want %q", c.vars, got, c.want)
		}
	}
}

// TestGaleraRankOrder: nodes rank by wsrep_gcomm_uuid (Galera's own order
// of a view's members), whatever their wsrep_local_index says in a view
// not yet the same on every node; a node without a uuid ranks after those
// with one, by its index.
func TestGaleraRankOrder(t *testing.T) {
	a := galeraRank(map[string]string{"wsrep_gcomm_uuid": "CE6E0A57-ea9f-11f1-9908-42ebbc34153a", "wsrep_local_index": "2"})
	b := galeraRank(map[string]string{"wsrep_gcomm_uuid": "ced988e8-ea9f-11f1-9340-160fd0d69dbc", "wsrep_local_index": "0"})
	c := galeraRank(map[string]string{"wsrep_local_index": "1"})
	d := galeraRank(map[string]string{"wsrep_local_index": "10"})
	if !(a < b && b < c && c < d) {
		t.Errorf("ranks %q %q %q %q, want in that order", a, b, c, d)
	}
}

// TestGaleraCausalReadsAfterWriterChange: once the writer is chosen (and
// after every move), connections read with wsrep_sync_wait 7 (reads,
// UPDATE/DELETE, INSERT/REPLACE wait until the node has applied what the
// cluster certified before them) for two rounds of checks; then a reused
// connection is back to the server's own setting.
func TestGaleraCausalReadsAfterWriterChange(t *testing.T) {
	nodes := galeraNodesShared(t)
	dsn, _ := galeraList(t, nodes)
	opts := testOptions(t)
	opts.CheckTimeout = 500 * time.Millisecond
	// The writer is chosen at the latest when the first query connects:
	// its window begins after this instant (taken after that query, the
	// window had begun a round trip earlier: seen 1.1996 s against 1.2 s).
	chosen := time.Now()
	db, fc := openList(t, dsn, opts)
	db.SetMaxIdleConns(1)
	db.SetMaxOpenConns(1)
	ctx := ctxT(t, time.Minute)
	var global, session int
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.wsrep_sync_wait, @@SESSION.wsrep_sync_wait").Scan(&global, &session); err != nil {
		t.Fatal(err)
	}
	if session != global|7 {
		t.Errorf("just after the writer %s was chosen: session wsrep_sync_wait %d, want %d (the global %d | 7)", fc.Current(), session, global|7, global)
	}
	waitFor(t, 20*time.Second, "a reused connection to read with the server's own wsrep_sync_wait", func() bool {
		err := db.QueryRowContext(ctx, "SELECT @@SESSION.wsrep_sync_wait").Scan(&session)
		return err == nil && session == global
	})
	if waited, window := time.Since(chosen), opts.causalWindow(); waited < window {
		t.Errorf("causal reads ended %s after the choice, before the window of %s", waited, window)
	}
}
