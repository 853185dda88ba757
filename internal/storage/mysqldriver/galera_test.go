package mysqldriver_test

import (
	"context"
	"testing"

	"github.com/argo-retry/argo/internal/storage/mysqldriver"
	"github.com/argo-retry/argo/internal/testdb"
)

// The batched gated claim runs on a MariaDB server and never on a Galera
// node, where it lost updates (flow_batch.go): there the gated claim takes
// the ordinary path, statement by statement.
func TestFlowBatchNotOnGalera(t *testing.T) {
	for _, b := range testdb.ConformanceBackends(t) {
		if b.Name == "sqlite" {
			continue
		}
		t.Run(b.Name, func(t *testing.T) {
			d := openStore(t, b.FreshDSN(t), true).Driver().(*mysqldriver.Driver)
			batch, ok, err := d.BeginFlowBatch(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				batch.Close()
			}
			if want := b.Name != "galera"; ok != want {
				t.Fatalf("on %s the batched gated claim is used: %v, want %v", b.Name, ok, want)
			}
		})
	}
}
