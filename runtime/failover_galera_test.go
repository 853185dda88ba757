package runtime

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// galeraCluster returns the nodes' driver DSNs and the commands that kill
// and start a node (append its number), from the environment that
// scripts/galera.sh env prints; the test is skipped (fails under CI) without
// it. The cluster's disruption lock is held until the test ends.
func galeraCluster(t *testing.T) (nodes []string, kill, start string) {
	t.Helper()
	env, kill, start := os.Getenv("ARGO_TEST_GALERA_DSNS"), os.Getenv("ARGO_TEST_GALERA_KILL_NODE"), os.Getenv("ARGO_TEST_GALERA_START_NODE")
	if env == "" || kill == "" || start == "" {
		msg := "ARGO_TEST_GALERA_DSNS, _KILL_NODE and _START_NODE are not set: start a cluster with scripts/galera.sh start DIR and eval \"$(scripts/galera.sh env DIR)\""
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
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
	return strings.Split(env, ","), kill, start
}

// nodeCommand runs a kill or start command of the cluster for node n.
func nodeCommand(t *testing.T, command string, n int) {
	t.Helper()
	began := time.Now()
	out, err := exec.Command("sh", "-c", command+" "+string(rune('0'+n))).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %d: %v\n%s", command, n, err, out)
	}
	t.Logf("%s %d (%s)", command, n, time.Since(began).Round(time.Millisecond))
}

// TestGaleraFailover runs a runtime on a DSN naming the three nodes of a
// Galera cluster under a steady stream of submits, SIGKILLs the node in use,
// restarts it, then SIGKILLs the node the runtime moved to: submits go on
// through another node each time (the longest interval with no successful
// submit is printed), the restarted node is used again, and every accepted
// submit's row is there at the end (nothing lost across the failovers).
func TestGaleraFailover(t *testing.T) {
	nodes, kill, start := galeraCluster(t)
	var addrs []string
	var user string
	for _, n := range nodes {
		mc, err := mysql.ParseDSN(n)
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, mc.Addr)
		user = mc.User
		if mc.Passwd != "" {
			user += ":" + mc.Passwd
		}
	}
	name := "argo_fo_" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	admin, err := sql.Open("mysql", nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("mysql", strings.Join(nodes[2:3], ""))
		if err == nil {
			db.Exec("DROP DATABASE IF EXISTS " + name)
			db.Close()
		}
	})
	dsn := "mysql:" + user + "@tcp(" + strings.Join(addrs, ",") + ")/" + name
	cfg := testConfigT(t, dsn)
	cfg.InstanceID = "galera-failover"
	cfg.LeaseDuration = 20 * time.Second // above the cluster's stall when a node dies
	rt := startRuntime(t, cfg)
	def := &TaskDef{Name: "failover.galera", Policy: fastPolicy(3), Run: func(context.Context, []byte) error { return nil }}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	stream := startSubmitStream(rt, def, 4)
	defer stream.close()
	began := time.Now()
	waitFor(t, 30*time.Second, "50 submits", func() bool { return stream.succeededSince(began) >= 50 })
	onServer(t, rt.DB(), addrs[0], 10*time.Second)

	down := map[int]bool{} // killed and not yet started again: started when the test ends early
	t.Cleanup(func() {
		for n := range down {
			nodeCommand(t, start, n)
		}
	})
	killNode := func(n int) { down[n] = true; nodeCommand(t, kill, n) }
	startNode := func(n int) { nodeCommand(t, start, n); delete(down, n) }

	killed1 := time.Now()
	killNode(1)
	waitFor(t, 60*time.Second, "50 submits after node 1 was killed", func() bool { return stream.succeededSince(killed1) >= 50 })
	gap1 := stream.longestGap(killed1)
	startNode(1)

	killed2 := time.Now()
	killNode(2)
	waitFor(t, 60*time.Second, "50 submits after node 2 was killed", func() bool { return stream.succeededSince(killed2) >= 50 })
	gap2 := stream.longestGap(killed2)
	onServer(t, rt.DB(), addrs[0], 30*time.Second) // node 1 is back, and listed first
	startNode(2)
	stream.close()
	stream.stop = make(chan struct{}) // closed again by the deferred close

	in := rt.Inspector()
	stream.mu.Lock()
	ids := stream.ids
	stream.mu.Unlock()
	for _, id := range ids {
		if _, err := in.Get(ctx, id); err != nil {
			t.Errorf("accepted task %d: %v", id, err)
		}
	}
	t.Logf("Galera: %d submits accepted, %d refused; longest interval with no successful submit: %s after node 1 was killed, %s after node 2 was killed",
		len(ids), stream.refusedCount(), gap1.Round(time.Millisecond), gap2.Round(time.Millisecond))
	if err := stream.wrong.Load(); err != nil {
		t.Errorf("a refused submit wrapped neither ErrNotPersisted nor ErrOutcomeUnknown: %v", err)
	}
}
