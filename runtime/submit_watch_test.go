package runtime

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRolledBackSubmitTxWatcherClaimsNoOtherRow: a SubmitTx whose
// transaction rolls back gives its id up, and SQLite hands that id to the
// next INSERT (it reuses the largest rowid unless the table is
// AUTOINCREMENT). The rolled-back call's commit watcher must not claim that
// new row, here a keyed call whose key is held by a running call: the
// watcher claims only the row its own call wrote (by the submit token), so
// the keyed call starts through the claim's order gate, after the call
// ahead of it. Before the fix the watcher claimed it by id and it ran beside
// the call of its key (the fault checker's tx-rollback feature, seeds 11,
// 12, 47). On MariaDB ids are not handed out again; the test then checks
// the same order without the reuse.
func TestRolledBackSubmitTxWatcherClaimsNoOtherRow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		cfg := testConfig(dsn)
		// Free workers for the watcher while the poller claims (it
		// reserves ClaimBatch workers for each claim).
		cfg.Workers, cfg.ClaimBatch = 8, 1
		// The watcher watches for two poll intervals: long enough that it
		// is still watching when the next call is written.
		cfg.PollInterval = time.Second
		rt := startRuntime(t, cfg)

		ended := make(chan int64, 16)
		hook := func(id int64) { ended <- id }
		watchCommitEnded.Store(&hook)
		t.Cleanup(func() { watchCommitEnded.Store(nil) })

		release := make(chan struct{})
		var mu sync.Mutex
		running := ""
		var started []string
		ran := func(name string) func() bool {
			return func() bool {
				mu.Lock()
				defer mu.Unlock()
				return slices.Contains(started, name)
			}
		}
		keyed := &TaskDef{Name: "watch.keyed", Policy: fastPolicy(1), Run: func(ctx context.Context, raw []byte) error {
			var a orderedArgs
			if err := json.Unmarshal(raw, &a); err != nil {
				return Undecodable(err)
			}
			mu.Lock()
			if running != "" {
				t.Errorf("key k: call %q started while call %q runs", a.Key, running)
			}
			running = a.Key
			started = append(started, a.Key)
			mu.Unlock()
			if a.Key == "first" {
				select {
				case <-release:
				case <-time.After(time.Minute):
					t.Error("the first call was never released")
				}
			}
			mu.Lock()
			running = ""
			mu.Unlock()
			return nil
		}}
		plain := &TaskDef{Name: "watch.plain", Policy: fastPolicy(1), Run: func(context.Context, []byte) error {
			t.Error("the rolled-back call ran")
			return nil
		}}
		for _, d := range []*TaskDef{keyed, plain} {
			if err := rt.Register(d); err != nil {
				t.Fatal(err)
			}
		}
		call := func(name string) Call {
			raw, _ := json.Marshal(orderedArgs{Key: name})
			return Call{Task: keyed, Args: raw, OrderKey: "k"}
		}
		if _, err := rt.Submit(ctx, call("first")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "the first call to start", ran("first"))

		tx, err := rt.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		gone, err := rt.SubmitTx(ctx, tx, Call{Task: plain, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		second, err := rt.Submit(ctx, call("second"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(dsn, "sqlite:") && second != gone {
			t.Fatalf("the call after the rollback got id %d, not the rolled-back %d: the test needs SQLite's reuse of the largest rowid", second, gone)
		}
		// The watcher of the rolled-back call has had its whole window.
		for id := int64(0); id != gone; {
			id = receive(t, ended, 30*time.Second, "the rolled-back call's commit watcher to end")
		}
		if ran("second")() {
			t.Fatalf("the second call of key k started while the first runs (started %v)", started)
		}
		close(release)
		waitFor(t, 30*time.Second, "the second call to start after the first ended", ran("second"))
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"first", "second"}; !slices.Equal(started, want) {
			t.Fatalf("calls of key k started %v, want %v", started, want)
		}
	})
}
