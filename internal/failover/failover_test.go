package failover

import (
	"strings"
	"testing"
	"time"
)

// TestFailoverAndBack: connections go to the first listed server; when it
// is killed, to the second (pooled connections to the first leave the
// pool); the first, restarted, is used again when the second is killed —
// with the same handle, no restart.
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
	waitFor(t, 30*time.Second, "queries to run on the restarted first server", onAll(portOfServer(t, srv[0])))

	var failovers int
	for _, l := range logs() {
		if strings.Contains(l, "argo: database failover") {
			failovers++
		}
	}
	if failovers < 2 {
		t.Errorf("%d failovers logged, want 2", failovers)
	}
}
