package runtime

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The runtime's retention purge deletes finished rows in batches until
// none is left. (The purge's statements are tested by the conformance
// suite, internal/storage/storagetest/purge.go.)
func TestRetentionPurgeRuns(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig(dsn)
		cfg.RetentionAge, cfg.MaintenanceInterval, cfg.RescueInterval, cfg.PurgeBatch = 200*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond, 3
		rt := startRuntime(t, cfg)
		def := &TaskDef{Name: "short-lived", Policy: fastPolicy(1), Run: func(ctx context.Context, args []byte) error { return nil }}
		rt.Register(def)
		var idList []int64
		for range 7 {
			id, _ := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
			idList = append(idList, id)
		}
		waitFor(t, 10*time.Second, "all 7 finished rows purged", func() bool {
			for _, id := range idList {
				if _, err := rt.Inspector().Get(context.Background(), id); !errors.Is(err, ErrNotFound) {
					return false
				}
			}
			return true
		})
	})
}
