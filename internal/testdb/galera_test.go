package testdb

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// TestGaleraDatabaseOnEveryNode checks NewDatabase: the database is on every
// node, a row written through one node is read through the others, and ids
// are the cluster's own (each node its own offset), not the stepped ids of
// MySQLDSN, which would make two nodes hand out the same id.
func TestGaleraDatabaseOnEveryNode(t *testing.T) {
	g := GaleraCluster(t)
	d := g.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dbs := make([]*sql.DB, g.Nodes()+1)
	for node := 1; node <= g.Nodes(); node++ {
		db, cfg := openMySQL(t, d.DSN(node))
		if cfg.DBName != d.Name {
			t.Fatalf("node %d's DSN names database %q, want %q", node, cfg.DBName, d.Name)
		}
		for p := range cfg.Params {
			if strings.HasPrefix(p, "auto_increment") {
				t.Errorf("node %d's DSN sets %s: the cluster hands out ids itself", node, p)
			}
		}
		dbs[node] = db
	}
	if _, err := dbs[1].ExecContext(ctx, "CREATE TABLE t (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, node INT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for node := 1; node <= g.Nodes(); node++ {
		// The CREATE TABLE returned on node 1 once node 1 applied it; the
		// other nodes apply it in the same total order, maybe a moment
		// later: wsrep_sync_wait (INSERT is bit 4) makes the insert wait
		// until this node has applied what the cluster committed before it.
		conn, err := dbs[node].Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "SET SESSION wsrep_sync_wait = 7"); err != nil {
			t.Fatal(err)
		}
		res, err := conn.ExecContext(ctx, "INSERT INTO t (node) VALUES (?)", node)
		if err != nil {
			t.Fatalf("insert through node %d: %v", node, err)
		}
		conn.Close()
		id, _ := res.LastInsertId()
		ids = append(ids, id)
	}
	for node := 1; node <= g.Nodes(); node++ {
		var n int
		// wsrep_sync_wait makes the read wait until the node has applied
		// every write the cluster committed before it.
		conn, err := dbs[node].Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "SET SESSION wsrep_sync_wait = 1"); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		if n != g.Nodes() {
			t.Errorf("node %d sees %d rows, want %d", node, n, g.Nodes())
		}
	}
	// Every node its own offset: the ids of one insert per node differ modulo the step.
	offsets := map[int64]bool{}
	for _, id := range ids {
		offsets[id%int64(g.Nodes())] = true
	}
	if len(offsets) != g.Nodes() {
		t.Errorf("ids %v through nodes 1-%d share an offset: the nodes would hand out the same ids to concurrent inserts", ids, g.Nodes())
	}
}

// TestGaleraFailoverDSN checks the order of the servers FailoverDSN names.
func TestGaleraFailoverDSN(t *testing.T) {
	g := GaleraCluster(t)
	d := g.NewDatabase(t)
	addr := func(node int) string {
		_, cfg := openMySQL(t, d.DSN(node))
		return cfg.Addr
	}
	dsn := d.FailoverDSN(2)
	want := "@tcp(" + addr(2) + "," + addr(3) + "," + addr(1) + ")/" + d.Name
	if !strings.Contains(dsn, want) || !strings.HasPrefix(dsn, "mysql:") {
		t.Fatalf("FailoverDSN(2) = %q, want the nodes 2, 3, 1: …%s", dsn, want)
	}
}

// TestConformanceBackendsHaveGalera checks that the conformance suite's
// backends include the cluster, on the steady node, and that FreshDSN makes
// a new database on the backend's own server.
func TestConformanceBackendsHaveGalera(t *testing.T) {
	g := GaleraCluster(t)
	var galera *Backend
	for _, b := range ConformanceBackends(t) {
		if b.Name == "galera" {
			galera = &b
		}
	}
	if galera == nil {
		t.Fatal("no galera backend although " + EnvGaleraDSNs + " is set")
	}
	steady, err := mysql.ParseDSN(g.ServerDSN(SteadyNode))
	if err != nil {
		t.Fatal(err)
	}
	for _, dsn := range []string{galera.DSN, galera.FreshDSN(t)} {
		_, cfg := openMySQL(t, dsn)
		if cfg.Addr != steady.Addr {
			t.Errorf("galera backend DSN on %s, want the steady node %s", cfg.Addr, steady.Addr)
		}
	}
	if a, b := galera.FreshDSN(t), galera.FreshDSN(t); a == b || a == galera.DSN {
		t.Errorf("FreshDSN gave the same database twice: %s", a)
	}
}

// TestConflictCounterCountsBFAborts makes one brute-force abort: a
// transaction open on node 1 holds a row that a transaction of node 2 then
// commits; the replicated write aborts the local one. The counter must see
// it (and nothing much else).
func TestConflictCounterCountsBFAborts(t *testing.T) {
	g := GaleraCluster(t)
	d := g.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db1, _ := openMySQL(t, d.DSN(1))
	db2, _ := openMySQL(t, d.DSN(2))
	c := g.CountConflicts(t)
	makeBFAbort(t, ctx, db1, db2)
	c.Sample()
	if c.BFAborts+c.CertFailures < 1 || c.BFAborts+c.CertFailures > 5 {
		t.Errorf("counted %d brute-force aborts and %d certification failures, want 1 in all (a few more from other tests at most)", c.BFAborts, c.CertFailures)
	}
}

// makeBFAbort makes one brute-force abort on local's node: a transaction
// open there holds a row that a transaction through remote's node then
// commits; the replicated write aborts the local one.
func makeBFAbort(t *testing.T, ctx context.Context, local, remote *sql.DB) {
	t.Helper()
	if _, err := local.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS bf (id INT PRIMARY KEY, v INT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := local.ExecContext(ctx, "INSERT IGNORE INTO bf VALUES (1, 0)"); err != nil {
		t.Fatal(err)
	}
	waitRow(t, ctx, remote, "bf")
	tx, err := local.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "UPDATE bf SET v = v + 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.ExecContext(ctx, "UPDATE bf SET v = v + 2 WHERE id = 1"); err != nil {
		t.Fatalf("the remote write: %v", err)
	}
	err = tx.Commit()
	var myErr *mysql.MySQLError
	if !errors.As(err, &myErr) || myErr.Number != 1213 {
		t.Fatalf("the local transaction's commit: %v, want a deadlock error (1213): a brute-force abort", err)
	}
}

// waitRow waits until db (through some node) sees the row of table with id 1.
func waitRow(t *testing.T, ctx context.Context, db *sql.DB, table string) {
	t.Helper()
	for {
		var n int
		err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE id = 1").Scan(&n)
		if err == nil && n == 1 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the row never reached the other node: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGaleraKillAndRejoin kills a node, writes while it is down, starts it
// again and checks that it is Synced with the write (caught up by IST, not
// a full SST), that the conflict counter keeps what the node counted before
// it died, and that the cluster lock kept every other test out meanwhile and
// was given back, with the node up again, when the test ended.
func TestGaleraKillAndRejoin(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a Galera node: some 15 s")
	}
	const victim = 3
	var g *Galera
	t.Run("disrupt", func(t *testing.T) {
		g = DisruptGaleraCluster(t)
		d := g.NewDatabase(t)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		db1, _ := openMySQL(t, d.DSN(SteadyNode))
		dbVictim, _ := openMySQL(t, d.DSN(victim))
		if _, err := db1.ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		c := g.CountConflicts(t)
		makeBFAbort(t, ctx, dbVictim, db1) // counted on the victim, which then dies
		c.Sample()

		g.KillNode(t, victim)
		if _, err := g.Status(ctx, victim); err == nil {
			t.Fatalf("node %d answers after KillNode", victim)
		}
		if other, err := lockFile(g.lockPath, false, 200*time.Millisecond); err == nil {
			other.unlock()
			t.Fatal("another test could take the cluster lock while a node was down")
		}
		start := time.Now()
		if _, err := db1.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
			t.Fatalf("write through node %d while node %d is down: %v", SteadyNode, victim, err)
		}
		t.Logf("first write after the kill took %s (the cluster's failure detection)", time.Since(start).Round(time.Millisecond))
		if said := g.StartNode(t, victim); !strings.Contains(said, "by IST") {
			t.Errorf("node %d rejoined, but not by IST: %q", victim, said)
		}

		st, err := g.Status(ctx, victim)
		if err != nil || !g.synced(st) {
			t.Fatalf("node %d after StartNode: %+v, %v; want Synced in a cluster of %d", victim, st, err, g.Nodes())
		}
		var n int
		if err := dbVictim.QueryRowContext(ctx, "SELECT COUNT(*) FROM t WHERE id = 1").Scan(&n); err != nil || n != 1 {
			t.Fatalf("node %d after rejoining: %d rows, %v; want the row written while it was down", victim, n, err)
		}
		c.Sample() // the victim's counters began again at zero
		// makeBFAbort's conflict is a brute-force abort when the remote
		// write-set is applied before the local commit, a certification
		// failure when the local commit reached certification first (under
		// load): either is the one conflict to keep.
		if c.BFAborts+c.CertFailures < 1 {
			t.Errorf("after the restart the counter says %d brute-force aborts and %d certification failures; want the conflict made before the kill", c.BFAborts, c.CertFailures)
		}
		g.KillNode(t, victim) // left down: the test's end starts it again
	})
	if g == nil {
		return // skipped
	}
	lock, err := lockFile(g.lockPath, true, 5*time.Second)
	if err != nil {
		t.Fatalf("the cluster lock was not given back: %v", err)
	}
	lock.unlock()
	st, err := g.Status(context.Background(), victim)
	if err != nil || !g.synced(st) {
		t.Fatalf("node %d left down by the test: %+v, %v; want it started again and Synced when the test ended", victim, st, err)
	}
}

// TestGaleraClusterIsShared checks that a test using the cluster holds the
// lock shared: other users come in, a disruptive test waits.
func TestGaleraClusterIsShared(t *testing.T) {
	g := GaleraCluster(t)
	if g.lockPath == "" {
		t.Skip(EnvGaleraLock + " is not set: nothing to check")
	}
	other, err := lockFile(g.lockPath, false, 5*time.Second)
	if err != nil {
		t.Fatalf("a second user of the cluster was kept out: %v", err)
	}
	other.unlock()
	if ex, err := lockFile(g.lockPath, true, 200*time.Millisecond); err == nil {
		ex.unlock()
		t.Fatal("a disruptive test could take the cluster while another test used it")
	}
}

// TestFileLockExcludes checks the cluster lock between holders: shared
// with shared, exclusive with nothing.
func TestFileLockExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	a, err := lockFile(path, true, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, exclusive := range []bool{true, false} {
		if b, err := lockFile(path, exclusive, 200*time.Millisecond); err == nil {
			b.unlock()
			t.Fatalf("a second holder (exclusive %v) got the lock held exclusively", exclusive)
		}
	}
	a.unlock()
	r1, err := lockFile(path, false, time.Second)
	if err != nil {
		t.Fatalf("the lock was not free after unlock: %v", err)
	}
	r2, err := lockFile(path, false, time.Second)
	if err != nil {
		t.Fatalf("two shared holders: %v", err)
	}
	if b, err := lockFile(path, true, 200*time.Millisecond); err == nil {
		b.unlock()
		t.Fatal("an exclusive holder got the lock held shared")
	}
	r1.unlock()
	r2.unlock()
}

// TestGaleraSkipsWithoutCluster checks that a test needing the cluster is
// skipped, outside CI, when there is none.
func TestGaleraSkipsWithoutCluster(t *testing.T) {
	if os.Getenv("CI") != "" {
		t.Skip("under CI a missing cluster fails the test instead: nothing to check here")
	}
	t.Setenv(EnvGaleraDSNs, "")
	var skipped bool
	t.Run("inner", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		GaleraCluster(t)
	})
	if !skipped {
		t.Fatal("GaleraCluster without " + EnvGaleraDSNs + " did not skip")
	}
}
