package e2e

import (
	"context"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
)

// TestDurableWrappersStoreTheKeys: each generated wrapper of a task with
// shard-by=, unique-by=, tenant-by= and order-by= (KeyedDurable,
// KeyedDurableTx, KeyedDurableAfter) stores the call with its tenant, order
// key and unique key from the parameters, and calls of one shard-by value
// share a shard. On both databases.
func TestDurableWrappersStoreTheKeys(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			rt := startOn(t, b.DSN)
			ctx := context.Background()
			if err := KeyedDurable(ctx, "tenant-a", "acct-1", "ref-plain"); err != nil {
				t.Fatal(err)
			}
			tx, err := rt.DB().BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := KeyedDurableTx(ctx, tx, "tenant-b", "acct-1", "ref-tx"); err != nil {
				tx.Rollback()
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if _, err := KeyedDurableAfter(ctx, nil, "tenant-c", "acct-1", "ref-after"); err != nil {
				t.Fatal(err)
			}
			shards := map[int]bool{}
			for ref, tenant := range map[string]string{"ref-plain": "tenant-a", "ref-tx": "tenant-b", "ref-after": "tenant-c"} {
				var gotTenant, orderKey string
				var shard int
				err := rt.DB().QueryRowContext(ctx,
					"SELECT tenant, order_key, shard_key FROM argo_task WHERE unique_key = ?", ref).Scan(&gotTenant, &orderKey, &shard)
				if err != nil {
					t.Fatalf("the row of %s: %v", ref, err)
				}
				if gotTenant != tenant || orderKey != "acct-1" {
					t.Errorf("%s stored with tenant %q, order key %q; want %q, %q", ref, gotTenant, orderKey, tenant, "acct-1")
				}
				shards[shard] = true
			}
			if len(shards) != 1 {
				t.Errorf("three calls with shard-by value acct-1 are in shards %v, want one", shards)
			}
		})
	}
}
