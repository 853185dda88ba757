package runtime

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/go-sql-driver/mysql"
)

// galeraNodesShared returns the cluster's node DSNs (testdb.GaleraCluster:
// skipped, or failed under CI, without a cluster) and holds the cluster's
// disruption lock shared until the test ends: no test kills or isolates a
// node meanwhile, while tests that only read and write run beside this one.
func galeraNodesShared(t *testing.T) []string {
	t.Helper()
	return testdb.GaleraCluster(t).ServerDSNs()
}

// nodeWrites is what one node counted of one account's work
// (information_schema.USER_STATISTICS, kept while userstat=ON): only
// statements a client ran on that node count, not the writes it applied
// from the other nodes.
type nodeWrites struct {
	commits, inserted, updated, deleted int64
}

func (w nodeWrites) sub(o nodeWrites) nodeWrites {
	return nodeWrites{w.commits - o.commits, w.inserted - o.inserted, w.updated - o.updated, w.deleted - o.deleted}
}

func (w nodeWrites) rows() int64 { return w.inserted + w.updated + w.deleted }

func userWrites(t *testing.T, ctx context.Context, db *sql.DB, user string) nodeWrites {
	t.Helper()
	var w nodeWrites
	err := db.QueryRowContext(ctx, "SELECT COMMIT_TRANSACTIONS, ROWS_INSERTED, ROWS_UPDATED, ROWS_DELETED FROM information_schema.USER_STATISTICS WHERE USER = ?", user).
		Scan(&w.commits, &w.inserted, &w.updated, &w.deleted)
	if err == sql.ErrNoRows {
		return nodeWrites{}
	}
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestGaleraOneWriter runs two runtimes on one Galera cluster, their DSNs
// listing the nodes in different orders (2,3,1 and 3,1,2), through a
// workload of submits, runs and retries (every fifth task fails once): the
// nodes' own counters of the test's account show every argo write went
// through one node, and it is the Synced node of the primary component with
// the lowest wsrep_gcomm_uuid (the lowest wsrep_local_index).
func TestGaleraOneWriter(t *testing.T) {
	writers, elected := galeraWriters(t, "")
	if len(writers) != 1 || writers[0] != elected {
		t.Errorf("argo wrote through %d nodes (%v), want one: %s, the Synced node of the primary component with the lowest wsrep_gcomm_uuid", len(writers), writers, elected)
	}
}

// TestGaleraMultiWriterSetting: with argoMultiWriter=true in their DSNs,
// the same two runtimes write through the first node of their own lists:
// two nodes.
func TestGaleraMultiWriterSetting(t *testing.T) {
	writers, _ := galeraWriters(t, "?"+multiWriterParam+"=true")
	if len(writers) != 2 {
		t.Errorf("with %s=true argo wrote through %d nodes (%v), want 2 (each runtime's first listed)", multiWriterParam, len(writers), writers)
	}
}

// galeraWriters runs the workload of TestGaleraOneWriter with params
// appended to both DSNs, and returns the addresses of the nodes that
// counted writes of the test's account, and the node that should be the
// single writer.
func galeraWriters(t *testing.T, params string) (writers []string, elected string) {
	nodes := galeraNodesShared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admins := make([]*sql.DB, len(nodes))
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		mc, err := mysql.ParseDSN(n)
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = mc.Addr
		if admins[i], err = sql.Open("mysql", n); err != nil {
			t.Fatal(err)
		}
		defer admins[i].Close()
		// Per-account counters; left on (other tests may count too).
		if _, err := admins[i].ExecContext(ctx, "SET GLOBAL userstat = ON"); err != nil {
			t.Fatal(err)
		}
	}
	suffix := strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	name, user := "argo_w1_"+suffix, "argo_w1_"+suffix
	secret := make([]byte, 12)
	rand.Read(secret)
	password := hex.EncodeToString(secret)
	for _, q := range []string{
		"CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
		"CREATE USER '" + user + "'@'%' IDENTIFIED BY '" + password + "'",
		"GRANT ALL ON " + name + ".* TO '" + user + "'@'%'",
	} {
		if _, err := admins[0].ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", strings.Replace(q, password, "***", 1), err)
		}
	}
	t.Cleanup(func() {
		admins[0].Exec("DROP DATABASE IF EXISTS " + name)
		admins[0].Exec("DROP USER IF EXISTS '" + user + "'@'%'")
	})
	before := make([]nodeWrites, len(nodes))
	for i := range nodes {
		before[i] = userWrites(t, ctx, admins[i], user)
	}

	orders := [][]int{{1, 2, 0}, {2, 0, 1}}
	const perRuntime = 150
	rts := make([]*Runtime, len(orders))
	defs := make([]*TaskDef, len(orders))
	for r, order := range orders {
		var list []string
		for _, i := range order {
			list = append(list, addrs[i])
		}
		cfg := testConfigT(t, "mysql:"+user+":"+password+"@tcp("+strings.Join(list, ",")+")/"+name+params)
		cfg.InstanceID = fmt.Sprintf("one-writer-%d", r)
		cfg.LeaseDuration = 20 * time.Second
		rts[r] = startRuntime(t, cfg)
		defs[r] = &TaskDef{Name: "galera.one_writer", Policy: fastPolicy(3), Run: func(ctx context.Context, raw []byte) error {
			var a clusterArgs
			if err := json.Unmarshal(raw, &a); err != nil {
				return Undecodable(err)
			}
			if _, attempt, _ := AttemptFrom(ctx); a.N%5 == 0 && attempt == 1 {
				return fmt.Errorf("transient failure of task n=%d", a.N)
			}
			return nil
		}}
		if err := rts[r].Register(defs[r]); err != nil {
			t.Fatal(err)
		}
	}
	for n := range perRuntime * len(rts) {
		r := n % len(rts)
		raw, _ := json.Marshal(clusterArgs{N: n})
		c := Call{Task: defs[r], Args: raw}
		if n%2 == 1 {
			c.RunAt = time.Now() // through a claim
		}
		if _, err := rts[r].Submit(ctx, c); err != nil {
			t.Fatalf("submit %d: %v", n, err)
		}
	}
	waitFor(t, 3*time.Minute, "every task to succeed", func() bool {
		counts, err := rts[0].Inspector().CountByState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return counts[StateSucceeded] == perRuntime*len(rts)
	})
	for _, rt := range rts {
		rt.Stop(ctx)
	}

	var report []string
	lowest := ""
	for i := range nodes {
		d := userWrites(t, ctx, admins[i], user).sub(before[i])
		var uuid, state, status string
		admins[i].QueryRowContext(ctx, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_GCOMM_UUID'").Scan(&uuid)
		admins[i].QueryRowContext(ctx, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_LOCAL_STATE_COMMENT'").Scan(&state)
		admins[i].QueryRowContext(ctx, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_CLUSTER_STATUS'").Scan(&status)
		report = append(report, fmt.Sprintf("node %d (%s, %s %s, gcomm %s): %d commits, %d rows inserted, %d updated, %d deleted",
			i+1, addrs[i], status, state, uuid, d.commits, d.inserted, d.updated, d.deleted))
		if status == "Primary" && state == "Synced" && uuid != "" && (lowest == "" || uuid < lowest) {
			elected, lowest = addrs[i], uuid
		}
		if d.commits > 0 || d.rows() > 0 {
			writers = append(writers, addrs[i])
		}
	}
	t.Logf("argo's writes per node, DSNs listing nodes %v%s:\n  %s", orders, params, strings.Join(report, "\n  "))
	return writers, elected
}
