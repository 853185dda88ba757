package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestOrderedOutboxCommittedAfterALaterCall: a keyed call written inside a
// transaction left open (the outbox) gets its id at the INSERT (MySQL);
// a later call of the same key, submitted meanwhile, commits first and
// starts. When the transaction commits, the outbox call must wait until the
// later call has ended, its retry included (a retrying call holds its key,
// and goes on although the outbox call's id is smaller): never two calls of
// one key at once. Before the fix it started at the next claim, beside the
// running call.
func TestOrderedOutboxCommittedAfterALaterCall(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		if strings.HasPrefix(dsn, "sqlite:") {
			t.Skip("SQLite has one writer at a time: the open transaction holds the write lock, so the later call cannot be written before it commits (ids follow commit order)")
		}
		ctx := context.Background()
		cfg := testConfig(dsn)
		cfg.Workers = 4
		rt := startRuntime(t, cfg)
		release := make(chan struct{})
		var mu sync.Mutex
		running := map[string]string{} // key → call running now
		var started []string
		ran := func(name string) func() bool {
			return func() bool {
				mu.Lock()
				defer mu.Unlock()
				return slices.Contains(started, name)
			}
		}
		def := &TaskDef{Name: "ordered.outbox", Policy: fastPolicy(2), Run: func(ctx context.Context, raw []byte) error {
			var a orderedArgs
			if err := json.Unmarshal(raw, &a); err != nil {
				return Undecodable(err)
			}
			name := a.Key
			key := "k"
			if name == "marker" {
				key = "m"
			}
			mu.Lock()
			if other, busy := running[key]; busy {
				t.Errorf("key %s: call %q started while call %q runs", key, name, other)
			}
			running[key] = name
			started = append(started, name)
			mu.Unlock()
			_, attempt, _ := AttemptFrom(ctx)
			if name == "later" && attempt == 1 {
				select {
				case <-release:
				case <-time.After(time.Minute):
					t.Error("the later call was never released")
				}
			}
			mu.Lock()
			delete(running, key)
			mu.Unlock()
			if name == "later" && attempt == 1 {
				return errors.New("fails once: its retry holds the key")
			}
			return nil
		}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		call := func(name, key string) Call {
			raw, _ := json.Marshal(orderedArgs{Key: name})
			return Call{Task: def, Args: raw, OrderKey: key}
		}
		tx, err := rt.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		outbox, err := rt.SubmitTx(ctx, tx, call("outbox", "k"))
		if err != nil {
			t.Fatal(err)
		}
		later, err := rt.Submit(ctx, call("later", "k"))
		if err != nil {
			t.Fatal(err)
		}
		if later < outbox {
			t.Fatalf("the later call got id %d, before the open transaction's %d: the test needs ids handed out at the INSERT", later, outbox)
		}
		waitFor(t, 30*time.Second, "the later call to start", ran("later"))
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		// A call of another key, submitted after the commit and due after
		// the outbox call, starts only through a claim that read past the
		// outbox call (candidates come in due order): once it has started,
		// the outbox call had its chance to be taken.
		if _, err := rt.Submit(ctx, call("marker", "m")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "the marker call to start", ran("marker"))
		if ran("outbox")() {
			t.Fatalf("the outbox call started while the later call of its key runs (started: %v)", started)
		}
		close(release)
		waitFor(t, 30*time.Second, "the outbox call to start after the later one (and its retry) ended", ran("outbox"))
		mu.Lock()
		defer mu.Unlock()
		var keyed []string
		for _, s := range started {
			if s != "marker" {
				keyed = append(keyed, s)
			}
		}
		if want := []string{"later", "later", "outbox"}; !slices.Equal(keyed, want) {
			t.Fatalf("calls of key k started %v, want %v", keyed, want)
		}
	})
}
