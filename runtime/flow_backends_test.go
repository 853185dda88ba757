package runtime

import (
	"os"
	"sync"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
)

// galeraNodes maps the DSN forEachFlowBackend hands a test on the Galera
// cluster (its database through node 1) to the database's DSN through
// every node.
var galeraNodes sync.Map

// forEachFlowBackend runs fn on SQLite and MariaDB, as forEachBackend does,
// and, when a Galera cluster is there (ARGO_TEST_GALERA_DSNS, as make test
// starts one), on a fresh database of it too, named "galera": the flow
// group's state is shared by instances on different nodes there, so each
// instance connects through another node (instanceDSN), and the claims of
// one group race across nodes (certification decides, not the row lock).
func forEachFlowBackend(t *testing.T, fn func(t *testing.T, dsn string)) {
	forEachBackend(t, fn)
	if os.Getenv(testdb.EnvGaleraDSNs) == "" {
		return
	}
	t.Run("galera", func(t *testing.T) {
		db := testdb.GaleraCluster(t).NewDatabase(t) // holds the cluster lock (shared) until t ends
		dsn := db.DSN(testdb.SteadyNode)
		galeraNodes.Store(dsn, db.DSNs())
		t.Cleanup(func() { galeraNodes.Delete(dsn) })
		fn(t, dsn)
	})
}

// instanceDSN is the DSN the i-th instance of a test uses: dsn, or on the
// Galera cluster the database through node i mod 3 + 1.
func instanceDSN(dsn string, i int) string {
	if nodes, ok := galeraNodes.Load(dsn); ok {
		n := nodes.([]string)
		return n[i%len(n)]
	}
	return dsn
}
