package failover

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The Galera tests run on the cluster named by ARGO_TEST_GALERA_DSNS (the
// nodes' DSNs, comma-separated, as scripts/galera.sh env prints them). They
// take one node out of service at a time, holding ARGO_TEST_GALERA_LOCK.

// galeraNodes returns the nodes' driver DSNs, skipping the test (failing
// under CI) when no cluster is given, and holds the cluster's disruption
// lock until the test ends.
func galeraNodes(t *testing.T) []string {
	t.Helper()
	env := os.Getenv("ARGO_TEST_GALERA_DSNS")
	if env == "" {
		msg := "ARGO_TEST_GALERA_DSNS is not set: start a cluster with scripts/galera.sh start DIR and eval \"$(scripts/galera.sh env DIR)\""
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	nodes := strings.Split(env, ",")
	if len(nodes) < 3 {
		t.Fatalf("ARGO_TEST_GALERA_DSNS names %d nodes, want 3", len(nodes))
	}
	if lock := os.Getenv("ARGO_TEST_GALERA_LOCK"); lock != "" {
		f, err := os.OpenFile(lock, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() })
	}
	return nodes
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

// TestGaleraDesyncedNodeNotUsed: a node that is a donor or desynced
// (wsrep_local_state 2) is left, with its pooled connections, for a synced
// one, and used again once synced.
func TestGaleraDesyncedNodeNotUsed(t *testing.T) {
	nodes := galeraNodes(t)
	dsn, addrs := galeraList(t, nodes)
	opts := testOptions(t)
	db, fc := openList(t, dsn, opts)
	db.SetMaxIdleConns(4)
	ctx := ctxT(t, 3*time.Minute)
	if _, err := portOf(ctx, db); err != nil || fc.Current() != addrs[0] {
		t.Fatalf("first query: %v, on %s, want node 1 %s", err, fc.Current(), addrs[0])
	}
	if err := onNode(t, nodes[0], "SET GLOBAL wsrep_desync = ON"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := onNode(t, nodes[0], "SET GLOBAL wsrep_desync = OFF"); err != nil {
			t.Errorf("node 1 left desynced: %v", err)
		}
	})
	why, err := nodeCheck(t, nodes[0])
	if err != nil || !strings.Contains(why, "wsrep_local_state=2 (Donor/Desynced)") {
		t.Errorf("check of the desynced node: %q, %v; want it refused as Donor/Desynced", why, err)
	}
	_, port2, _ := strings.Cut(addrs[1], ":")
	waitFor(t, 30*time.Second, "every query to run on node 2", func() bool {
		for range 8 {
			if port, err := portOf(ctx, db); err != nil || port != port2 {
				return false
			}
		}
		return true
	})
	if err := onNode(t, nodes[0], "SET GLOBAL wsrep_desync = OFF"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "node 1 to be seen usable again", func() bool { return fc.servers[0].usable() })
}

// TestGaleraNonPrimaryNode: a node cut off from the others (non-primary
// component, wsrep_ready=OFF) answers 1047; the first such answer moves the
// connector to another node and drops the connections pooled on it, with
// no health-check round due (CheckInterval an hour).
func TestGaleraNonPrimaryNode(t *testing.T) {
	nodes := galeraNodes(t)
	dsn, addrs := galeraList(t, nodes)
	// A node outside the primary component still answers statements that
	// read no table (SELECT @@port): read a table.
	for _, q := range []string{"CREATE DATABASE IF NOT EXISTS failover_probe", "CREATE TABLE IF NOT EXISTS failover_probe.one (id INT PRIMARY KEY)", "INSERT IGNORE INTO failover_probe.one VALUES (1)"} {
		if err := onNode(t, nodes[0], q); err != nil {
			t.Fatal(err)
		}
	}
	portOf := func(ctx context.Context, db interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) (string, error) {
		var port string
		err := db.QueryRowContext(ctx, "SELECT @@port FROM failover_probe.one").Scan(&port)
		return port, err
	}
	opts := testOptions(t)
	opts.CheckInterval = time.Hour
	db, fc := openList(t, dsn, opts)
	db.SetMaxIdleConns(4)
	ctx := ctxT(t, 3*time.Minute)
	var held []*sql.Conn
	for range 4 {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	for _, c := range held {
		if _, err := portOf(ctx, c); err != nil {
			t.Fatal(err)
		}
		c.Close() // 4 idle connections to node 1
	}
	if fc.Current() != addrs[0] {
		t.Fatalf("on %s, want node 1 %s", fc.Current(), addrs[0])
	}
	waitFor(t, 10*time.Second, "node 2 to be checked once", func() bool { return fc.servers[1].usable() })

	if err := onNode(t, nodes[0], "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=1'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := onNode(t, nodes[0], "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=0'"); err != nil {
			t.Errorf("node 1 left isolated: %v", err)
		}
		waitSynced(t, nodes[0])
	})
	waitFor(t, 60*time.Second, "node 1 to answer 1047 (outside the primary component)", func() bool {
		var me *mysql.MySQLError
		return errors.As(onNode(t, nodes[0], "DO 1"), &me) && me.Number == 1047
	})
	why, err := nodeCheck(t, nodes[0])
	if err != nil || !strings.Contains(why, "wsrep_ready=OFF") {
		t.Errorf("check of the isolated node: %q, %v; want it refused for wsrep_ready=OFF", why, err)
	}

	_, port2, _ := strings.Cut(addrs[1], ":")
	failed := 0
	waitFor(t, 30*time.Second, "queries to run on node 2", func() bool {
		port, err := portOf(ctx, db)
		if err != nil {
			failed++
			t.Logf("query failed: %v", err)
			return false
		}
		return port == port2
	})
	if failed > 1 {
		t.Errorf("%d queries failed before the connector left node 1, want 1 (the first 1047 moves it)", failed)
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
