package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The runtime paths that claim by id (watchCommit after a SubmitTx, and
// fallbackNow after the last attempt fails) race the poller's claims of the
// same rows; each attempt and each fallback still runs exactly once.
func TestClaimByIDPathsRunOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig(dsn)
		cfg.PollInterval = 2 * time.Millisecond // the poller races every claim by id
		cfg.Workers = 8
		rt := startRuntime(t, cfg)
		const tasks = 100
		var runs, fallbacks calls
		var mu sync.Mutex
		inFlight := map[int64]bool{}
		var overlaps atomic.Int64
		def := &TaskDef{Name: "byid", Policy: fastPolicy(1),
			Run: func(ctx context.Context, _ []byte) error {
				id, _, _ := AttemptFrom(ctx)
				mu.Lock()
				if inFlight[id] {
					overlaps.Add(1)
				}
				inFlight[id] = true
				mu.Unlock()
				runs.inc(fmt.Sprint(id))
				mu.Lock()
				delete(inFlight, id)
				mu.Unlock()
				return fmt.Errorf("attempt of %d fails", id)
			},
			Fallback: func(ctx context.Context, _ []byte, _ error) error {
				id, _, _ := AttemptFrom(ctx)
				fallbacks.inc(fmt.Sprint(id))
				return nil
			}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		var ids []int64
		for i := range tasks {
			tx, err := rt.DB().BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			id, err := rt.SubmitTx(ctx, tx, Call{Task: def, Args: []byte(fmt.Sprintf(`{"n":%d}`, i))})
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		for _, id := range ids {
			waitState(t, rt, id, StateRecovered, 30*time.Second)
		}
		if err := rt.Stop(ctx); err != nil { // waits for every attempt and claim by id
			t.Fatal(err)
		}
		for _, id := range ids {
			if r, f := runs.get(fmt.Sprint(id)), fallbacks.get(fmt.Sprint(id)); r != 1 || f != 1 {
				t.Fatalf("task %d: %d attempts and %d fallbacks ran, want 1 and 1", id, r, f)
			}
		}
		if n := overlaps.Load(); n > 0 {
			t.Fatalf("%d attempts started while another attempt of the same task ran", n)
		}
	})
}
