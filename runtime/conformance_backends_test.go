package runtime

import (
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
)

// forEachConformanceBackend runs fn as a subtest per database of the storage
// conformance suite: those of forEachBackend and the Galera cluster
// (testdb.ConformanceBackends).
func forEachConformanceBackend(t *testing.T, fn func(t *testing.T, b testdb.Backend)) {
	for _, b := range testdb.ConformanceBackends(t) {
		t.Run(b.Name, func(t *testing.T) { fn(t, b) })
	}
}
