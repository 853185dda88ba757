package testdb

import (
	"fmt"
	"os"
	"testing"
)

// ConformanceBackends returns what Backends returns plus, when the Galera
// cluster is there (EnvGaleraDSNs), a fresh database on it named "galera".
// It is for the storage conformance suite, which must hold on every engine
// argo runs on; the other suites use Backends and stay off the cluster.
// Without a cluster the "galera" entry is left out (and noted in the test
// log), or under CI the test fails.
func ConformanceBackends(t *testing.T) []Backend {
	t.Helper()
	backends := Backends(t)
	if os.Getenv(EnvGaleraDSNs) == "" {
		if os.Getenv("CI") != "" {
			t.Fatal(galeraHint)
		}
		t.Log("galera backend left out: " + galeraHint)
		return backends
	}
	return append(backends, Backend{Name: "galera", DSN: GaleraDSN(t)})
}

// FreshDSN returns another empty database on b's backend, dropped when t
// ends: for suites that want one database per subtest.
func (b Backend) FreshDSN(t testing.TB) string {
	t.Helper()
	switch b.Name {
	case "sqlite":
		return SQLiteDSN(t)
	case "mysql":
		return MySQLDSN(t)
	case "galera":
		return GaleraDSN(t)
	}
	panic(fmt.Sprintf("testdb: unknown backend %q", b.Name))
}
