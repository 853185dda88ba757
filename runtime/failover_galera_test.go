package runtime

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/go-sql-driver/mysql"
)

// electedNode returns the index of the node argo should write through: the
// Synced node of the primary component with the lowest wsrep_gcomm_uuid,
// as the nodes report it now (a node that does not answer is skipped).
func electedNode(t *testing.T, nodes []string) int {
	t.Helper()
	best, lowest := -1, ""
	for i, n := range nodes {
		db, err := sql.Open("mysql", n)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		status := map[string]string{}
		rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_gcomm_uuid', 'wsrep_cluster_status', 'wsrep_local_state', 'wsrep_ready')")
		if err == nil {
			for rows.Next() {
				var k, v string
				if rows.Scan(&k, &v) == nil {
					status[k] = v
				}
			}
			rows.Close()
		}
		cancel()
		db.Close()
		uuid := strings.ToLower(status["wsrep_gcomm_uuid"])
		if status["wsrep_ready"] == "ON" && status["wsrep_cluster_status"] == "Primary" && status["wsrep_local_state"] == "4" && uuid != "" && (best < 0 || uuid < lowest) {
			best, lowest = i, uuid
		}
	}
	if best < 0 {
		t.Fatal("no node is Synced in the primary component")
	}
	return best
}

// TestGaleraFailover runs a runtime on a DSN naming the three nodes of a
// Galera cluster under a steady stream of submits, SIGKILLs the node in use
// (the elected one), restarts it, then SIGKILLs the node in use again:
// submits go on through the node elected among the others each time (the
// longest interval with no successful submit is printed), and every
// accepted submit's row is there at the end (nothing lost across the
// failovers).
func TestGaleraFailover(t *testing.T) {
	g := testdb.DisruptGaleraCluster(t) // nodes the test leaves down are started again when it ends
	nodes := g.ServerDSNs()
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
	w1 := electedNode(t, nodes)
	onServer(t, rt.DB(), addrs[w1], 10*time.Second)

	killNode := func(n int) { g.KillNode(t, n) }
	startNode := func(n int) { g.StartNode(t, n) }

	killed1 := time.Now()
	killNode(w1 + 1)
	waitFor(t, 60*time.Second, "50 submits after the writer was killed", func() bool { return stream.succeededSince(killed1) >= 50 })
	gap1 := stream.longestGap(killed1)
	onServer(t, rt.DB(), addrs[electedNode(t, nodes)], 30*time.Second)
	startNode(w1 + 1)

	w2 := electedNode(t, nodes)
	onServer(t, rt.DB(), addrs[w2], 30*time.Second) // the restarted node, if it ranks first again
	killed2 := time.Now()
	killNode(w2 + 1)
	waitFor(t, 60*time.Second, "50 submits after the writer was killed again", func() bool { return stream.succeededSince(killed2) >= 50 })
	gap2 := stream.longestGap(killed2)
	onServer(t, rt.DB(), addrs[electedNode(t, nodes)], 30*time.Second)
	startNode(w2 + 1)
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
	t.Logf("Galera: %d submits accepted, %d refused; longest interval with no successful submit: %s after node %d (the writer) was killed, %s after node %d (the writer) was killed",
		len(ids), stream.refusedCount(), gap1.Round(time.Millisecond), w1+1, gap2.Round(time.Millisecond), w2+1)
	if err := stream.wrong.Load(); err != nil {
		t.Errorf("a refused submit wrapped neither ErrNotPersisted nor ErrOutcomeUnknown: %v", err)
	}
}
