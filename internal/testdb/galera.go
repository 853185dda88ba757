package testdb

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The Galera cluster `make test` starts beside the MariaDB server
// (scripts/galera.sh): three MariaDB nodes on 127.0.0.1 replicating
// synchronously, every one writable. Tests reach it through these
// environment variables, which `scripts/galera.sh env DIR` prints.
const (
	// EnvGaleraDSNs holds the nodes' go-sql-driver DSNs without a database
	// name, comma-separated, node 1 first.
	EnvGaleraDSNs = "ARGO_TEST_GALERA_DSNS"
	// EnvGaleraKillNode is a shell command that SIGKILLs the node whose
	// number (1-3) is appended.
	EnvGaleraKillNode = "ARGO_TEST_GALERA_KILL_NODE"
	// EnvGaleraStartNode is a shell command that starts the node whose
	// number is appended again (--wsrep-recover, then a rejoin by IST) and
	// waits until it is Synced.
	EnvGaleraStartNode = "ARGO_TEST_GALERA_START_NODE"
	// EnvGaleraLock names a file every test using the cluster flocks (go
	// test runs packages as separate processes): shared by the tests that
	// only use it, exclusive by a test that takes a node down or out of
	// service, so that no test sees another's disruption and two tests
	// never take down two nodes of three and lose the quorum.
	EnvGaleraLock = "ARGO_TEST_GALERA_LOCK"
)

const galeraHint = EnvGaleraDSNs + " is not set, so there is no Galera cluster to test on. " +
	"Run the tests with `make test`, which starts a throwaway 3-node cluster on 127.0.0.1 " +
	"(it needs galera-4, rsync and mariadb-server: sudo apt-get install galera-4 rsync mariadb-server), " +
	"or start one yourself: scripts/galera.sh start /tmp/argo-galera && eval \"$(scripts/galera.sh env /tmp/argo-galera)\""

// SteadyNode is the node new databases are created through, and the node
// of GaleraDSN. A disruptive test (DisruptGaleraCluster) may kill any node,
// including this one.
const SteadyNode = 1

// Deadlines of the cluster helpers.
const (
	// DefaultGaleraRejoinTimeout bounds StartNode: recovery, rejoin by
	// IST and reaching Synced.
	DefaultGaleraRejoinTimeout = 3 * time.Minute
	// DefaultGaleraVisibleTimeout bounds the wait for a new database to
	// appear on every node.
	DefaultGaleraVisibleTimeout = 3 * time.Minute
	// DefaultGaleraLockTimeout bounds the wait for the cluster lock
	// (EnvGaleraLock): for a disruptive test to give the cluster back, or,
	// for a disruptive test, for the others to finish.
	DefaultGaleraLockTimeout = 10 * time.Minute
	// galeraStatusTimeout bounds one status query of one node.
	galeraStatusTimeout = 3 * time.Second
)

// Galera is the test cluster, as one test sees it: each test gets its own
// (from GaleraCluster or DisruptGaleraCluster), which holds the test's
// share of the cluster lock and remembers the nodes the test took down.
type Galera struct {
	servers   []string // node i+1's server DSN (no database)
	killCmd   string
	startCmd  string
	lockPath  string
	exclusive bool // from DisruptGaleraCluster: the test may take nodes down

	mu     sync.Mutex
	killed map[int]bool // nodes this test killed and has not started again
	lock   *fileLock    // the cluster lock, until the test ends
}

// GaleraCluster returns the cluster from EnvGaleraDSNs, for a test that
// uses it without taking nodes down: the test holds the cluster lock
// shared until it ends, so no disruptive test runs meanwhile (it waits up
// to DefaultGaleraLockTimeout for one to finish). Without a cluster the
// test is skipped with a message saying how to get one, or fails under CI.
func GaleraCluster(t testing.TB) *Galera {
	t.Helper()
	return galeraCluster(t, false)
}

// DisruptGaleraCluster is GaleraCluster for a test that takes nodes down
// (KillNode): it holds the cluster lock exclusively until it ends, waiting
// for the tests using the cluster to finish, and starts from a cluster
// whose nodes are all Synced. Nodes the test left down are started again
// before the lock is given back.
func DisruptGaleraCluster(t testing.TB) *Galera {
	t.Helper()
	return galeraCluster(t, true)
}

func galeraCluster(t testing.TB, exclusive bool) *Galera {
	t.Helper()
	raw := os.Getenv(EnvGaleraDSNs)
	if raw == "" {
		skipOrFail(t, galeraHint)
	}
	g := &Galera{killCmd: os.Getenv(EnvGaleraKillNode), startCmd: os.Getenv(EnvGaleraStartNode),
		lockPath: os.Getenv(EnvGaleraLock), exclusive: exclusive, killed: map[int]bool{}}
	if exclusive && (g.killCmd == "" || g.startCmd == "" || g.lockPath == "") {
		skipOrFail(t, EnvGaleraKillNode+", "+EnvGaleraStartNode+" and "+EnvGaleraLock+" are not all set, so nodes cannot be taken down: "+
			"run the tests with `make test`, or export what `scripts/galera.sh env DIR` prints")
	}
	for _, dsn := range strings.Split(raw, ",") {
		if dsn = strings.TrimSpace(dsn); dsn == "" {
			continue
		}
		if _, err := mysql.ParseDSN(dsn); err != nil {
			t.Fatalf("testdb: %s: %q is not a go-sql-driver DSN: %v", EnvGaleraDSNs, dsn, err)
		}
		g.servers = append(g.servers, dsn)
	}
	if len(g.servers) < 3 {
		t.Fatalf("testdb: %s names %d nodes, want 3 or more (comma-separated DSNs)", EnvGaleraDSNs, len(g.servers))
	}
	if g.lockPath != "" {
		start := time.Now()
		lock, err := lockFile(g.lockPath, exclusive, DefaultGaleraLockTimeout)
		if err != nil {
			t.Fatalf("testdb: Galera cluster lock: %v", err)
		}
		g.lock = lock
		if waited := time.Since(start); waited > time.Second {
			t.Logf("testdb: waited %s for the Galera cluster lock (exclusive: %v)", waited.Round(time.Millisecond), exclusive)
		}
	}
	t.Cleanup(func() { g.restore(t) })
	if exclusive {
		// The last disruptive test may have left a node catching up.
		g.WaitSynced(t, DefaultGaleraRejoinTimeout)
	}
	return g
}

// Nodes is the number of nodes; they are numbered from 1.
func (g *Galera) Nodes() int { return len(g.servers) }

// ServerDSN returns node's go-sql-driver DSN without a database name.
func (g *Galera) ServerDSN(node int) string { return g.servers[g.index(node)] }

// ServerDSNs returns every node's go-sql-driver DSN without a database
// name, node 1 first.
func (g *Galera) ServerDSNs() []string { return append([]string(nil), g.servers...) }

func (g *Galera) index(node int) int {
	if node < 1 || node > len(g.servers) {
		panic(fmt.Sprintf("testdb: Galera node %d does not exist (1-%d)", node, len(g.servers)))
	}
	return node - 1
}

// GaleraDSN creates a fresh database on the cluster's SteadyNode, drops it
// when the test ends, and returns that node's "mysql:" DSN for it; the test
// holds the cluster lock shared (see GaleraCluster). Ids are those the
// cluster hands out (each node its own offset, step the cluster size).
// Without a cluster the test is skipped, or fails under CI.
func GaleraDSN(t testing.TB) string {
	t.Helper()
	g := GaleraCluster(t)
	return "mysql:" + createDatabase(t, g.ServerDSN(SteadyNode)).FormatDSN()
}

// GaleraDatabase is one database on the cluster, reachable through any node.
type GaleraDatabase struct {
	Name string
	dsns []string // "mysql:" DSN through node i+1
}

// DSN returns the "mysql:" DSN of the database through node.
func (d *GaleraDatabase) DSN(node int) string { return d.dsns[node-1] }

// DSNs returns the "mysql:" DSNs of the database through every node, node 1 first.
func (d *GaleraDatabase) DSNs() []string { return append([]string(nil), d.dsns...) }

// FailoverDSN returns the "mysql:" DSN of the database naming every node,
// first then the others in order (tcp(h1:p1,h2:p2,h3:p3)): argo's failover
// connector sends work to first while it is usable, to the next usable
// node in the list otherwise, and back to first once it has returned.
func (d *GaleraDatabase) FailoverDSN(first int) string {
	var addrs []string
	var cfg *mysql.Config
	for i := range d.dsns {
		node := (first-1+i)%len(d.dsns) + 1
		c, err := mysql.ParseDSN(strings.TrimPrefix(d.dsns[node-1], "mysql:"))
		if err != nil {
			panic(err) // made by NewDatabase from a DSN that parsed
		}
		if cfg == nil {
			cfg = c
		}
		addrs = append(addrs, c.Addr)
	}
	cfg.Addr = strings.Join(addrs, ",")
	return "mysql:" + cfg.FormatDSN()
}

// NewDatabase creates a fresh database through the SteadyNode, waits until
// every node has it (DefaultGaleraVisibleTimeout), and drops it when the
// test ends.
func (g *Galera) NewDatabase(t testing.TB) *GaleraDatabase {
	t.Helper()
	cfg := createDatabase(t, g.ServerDSN(SteadyNode))
	d := &GaleraDatabase{Name: cfg.DBName}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultGaleraVisibleTimeout)
	defer cancel()
	for node := 1; node <= g.Nodes(); node++ {
		ncfg, err := mysql.ParseDSN(g.ServerDSN(node))
		if err != nil {
			t.Fatal(err)
		}
		ncfg.DBName = d.Name
		d.dsns = append(d.dsns, "mysql:"+ncfg.FormatDSN())
		if err := g.waitDatabase(ctx, node, d.Name); err != nil {
			t.Fatalf("testdb: database %s created through node %d is not on node %d after %s: %v",
				d.Name, SteadyNode, node, DefaultGaleraVisibleTimeout, err)
		}
	}
	return d
}

func (g *Galera) waitDatabase(ctx context.Context, node int, name string) error {
	db, _, err := adminDB(g.ServerDSN(node))
	if err != nil {
		return err
	}
	for {
		var n int
		qctx, cancel := context.WithTimeout(ctx, galeraStatusTimeout)
		err = db.QueryRowContext(qctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&n)
		cancel()
		if err == nil && n == 1 {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("not there")
			}
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// NodeStatus is what one node says about itself and the cluster.
type NodeStatus struct {
	Node         int
	State        string // wsrep_local_state_comment: Synced, Donor/Desynced, Joining, …
	ClusterSize  int    // wsrep_cluster_size
	Ready        bool   // wsrep_ready: the node accepts queries
	Uptime       int64  // seconds since the node started (its counters start then)
	BFAborts     int64  // wsrep_local_bf_aborts: local transactions aborted by replicated ones
	CertFailures int64  // wsrep_local_cert_failures: local commits that failed certification
}

// Status queries node's wsrep status (galeraStatusTimeout at most).
func (g *Galera) Status(ctx context.Context, node int) (NodeStatus, error) {
	st := NodeStatus{Node: node}
	db, _, err := adminDB(g.ServerDSN(node))
	if err != nil {
		return st, err
	}
	ctx, cancel := context.WithTimeout(ctx, galeraStatusTimeout)
	defer cancel()
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN "+
		"('wsrep_local_state_comment', 'wsrep_cluster_size', 'wsrep_ready', 'Uptime', 'wsrep_local_bf_aborts', 'wsrep_local_cert_failures')")
	if err != nil {
		return st, fmt.Errorf("node %d: %w", node, err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return st, fmt.Errorf("node %d: %w", node, err)
		}
		seen++
		num, _ := strconv.ParseInt(value, 10, 64)
		switch strings.ToLower(name) {
		case "wsrep_local_state_comment":
			st.State = value
		case "wsrep_cluster_size":
			st.ClusterSize = int(num)
		case "wsrep_ready":
			st.Ready = value == "ON"
		case "uptime":
			st.Uptime = num
		case "wsrep_local_bf_aborts":
			st.BFAborts = num
		case "wsrep_local_cert_failures":
			st.CertFailures = num
		}
	}
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("node %d: %w", node, err)
	}
	if seen < 6 {
		return st, fmt.Errorf("node %d: %d of 6 status variables: is wsrep on?", node, seen)
	}
	return st, nil
}

// Synced reports whether the status is that of a full member: Synced,
// ready, in a cluster of all the nodes.
func (g *Galera) synced(st NodeStatus) bool {
	return st.State == "Synced" && st.Ready && st.ClusterSize == g.Nodes()
}

// WaitSynced waits until every node is Synced and ready in a cluster of all
// the nodes, failing the test after timeout with each node's last status.
func (g *Galera) WaitSynced(t testing.TB, timeout time.Duration) {
	t.Helper()
	if err := g.waitSynced(timeout); err != nil {
		t.Fatalf("testdb: %v", err)
	}
}

func (g *Galera) waitSynced(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var last []string
		all := true
		for node := 1; node <= g.Nodes(); node++ {
			st, err := g.Status(context.Background(), node)
			switch {
			case err != nil:
				all = false
				last = append(last, err.Error())
			case !g.synced(st):
				all = false
				last = append(last, fmt.Sprintf("node %d %s, ready %v, cluster size %d", node, st.State, st.Ready, st.ClusterSize))
			}
		}
		if all {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Galera cluster not Synced after %s: %s", timeout, strings.Join(last, "; "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// KillNode SIGKILLs node, as in a crash. The test must hold the cluster
// from DisruptGaleraCluster. A node the test leaves down is started again
// when it ends.
func (g *Galera) KillNode(t testing.TB, node int) {
	t.Helper()
	g.index(node)
	if !g.exclusive {
		t.Fatalf("testdb: KillNode(%d) on a cluster from GaleraCluster: take it with DisruptGaleraCluster, so that no other test uses it meanwhile", node)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.killed[node] = true
	Sh(t, g.killCmd+" "+strconv.Itoa(node))
}

// StartNode starts a node the test killed and waits until it has rejoined
// and the whole cluster is Synced (DefaultGaleraRejoinTimeout). It returns
// what the start command said, such as "node 3 rejoined at UUID:SEQNO and is
// Synced in 5s by IST".
func (g *Galera) StartNode(t testing.TB, node int) string {
	t.Helper()
	g.index(node)
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.killed[node] {
		t.Fatalf("testdb: StartNode(%d): this test did not kill node %d", node, node)
	}
	said, err := g.startNode(node)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Logf("testdb: %s", said)
	return said
}

func (g *Galera) startNode(node int) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultGaleraRejoinTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", g.startCmd+" "+strconv.Itoa(node))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("starting Galera node %d: %s: %v\n%s", node, cmd.Args[2], err, out)
	}
	if err := g.waitSynced(DefaultGaleraRejoinTimeout); err != nil {
		return "", fmt.Errorf("after starting node %d: %w", node, err)
	}
	delete(g.killed, node)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimPrefix(lines[len(lines)-1], "galera.sh: "), nil
}

// restore starts the nodes the test left down, at its end, and gives the
// cluster lock back.
func (g *Galera) restore(t testing.TB) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for node := range g.killed {
		if _, err := g.startNode(node); err != nil {
			t.Errorf("testdb: restoring the cluster after the test: %v", err)
		}
	}
	if g.lock != nil {
		g.lock.unlock()
		g.lock = nil
	}
}

// ConflictCounter adds up, over the nodes, the transactions the cluster
// aborted because of conflicts between nodes: brute-force aborts (a local
// transaction killed by a replicated one that touched the same rows) and
// certification failures (a local commit refused because a transaction
// of another node committed a conflicting write first). A node's counters
// start at zero when it starts: call Sample before killing a node, so that
// what it counted is not lost.
type ConflictCounter struct {
	g    *Galera
	last map[int]NodeStatus // the last sample of each node that answered
	// Totals since the counter was made.
	BFAborts, CertFailures int64
}

// CountConflicts starts counting from now; every node must answer.
func (g *Galera) CountConflicts(t testing.TB) *ConflictCounter {
	t.Helper()
	c := &ConflictCounter{g: g, last: map[int]NodeStatus{}}
	for node := 1; node <= g.Nodes(); node++ {
		st, err := g.Status(context.Background(), node)
		if err != nil {
			t.Fatalf("testdb: conflict counters: %v", err)
		}
		c.last[node] = st
	}
	return c
}

// Sample adds what each node counted since the last sample. A node that
// does not answer (it is down) is skipped; one that restarted since (its
// Uptime went down) counts from zero.
func (c *ConflictCounter) Sample() {
	for node := 1; node <= c.g.Nodes(); node++ {
		st, err := c.g.Status(context.Background(), node)
		if err != nil {
			continue
		}
		prev, ok := c.last[node]
		if !ok || st.Uptime < prev.Uptime || st.BFAborts < prev.BFAborts || st.CertFailures < prev.CertFailures {
			prev = NodeStatus{} // restarted: its counters began again at zero
		}
		c.BFAborts += st.BFAborts - prev.BFAborts
		c.CertFailures += st.CertFailures - prev.CertFailures
		c.last[node] = st
	}
}
