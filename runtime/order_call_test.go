package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

type orderedArgs struct {
	Key string `json:"k"`
	Seq int    `json:"i"`
}

// TestOrderedKeysAcrossInstances submits calls of many order keys through
// three runtimes on one database, in a known order, some due later (never
// held for a local timer), some through a transaction, some failing once (a retrying call keeps its
// key), some ending dead (the key passes on). Per key, attempts never
// overlap and start in submit order, retries before the next call;
// different keys run at the same time.
func TestOrderedKeysAcrossInstances(t *testing.T) {
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	forEachBackend(t, func(t *testing.T, dsn string) {
		const instances, keys, perKey = 3, 12, 8
		ctx := context.Background()
		var (
			mu        sync.Mutex
			running   = map[string]int{} // key → seq of the attempt running now
			starts    = map[string][]int{}
			ended     = map[string]int{} // key → calls ended (succeeded or dead)
			atOnce    int
			maxAtOnce int
		)
		rts := make([]*Runtime, instances)
		defs := make([]*TaskDef, instances)
		for i := range instances {
			cfg := testConfig(dsn)
			cfg.InstanceID = fmt.Sprintf("ordered-%d", i)
			cfg.Workers = 8
			cfg.LeaseDuration = 20 * time.Second
			rts[i] = startRuntime(t, cfg)
			defs[i] = &TaskDef{Name: "ordered.work", Policy: fastPolicy(2), Run: func(ctx context.Context, raw []byte) error {
				var a orderedArgs
				if err := json.Unmarshal(raw, &a); err != nil {
					return Undecodable(err)
				}
				_, attempt, _ := AttemptFrom(ctx)
				mu.Lock()
				if other, busy := running[a.Key]; busy {
					t.Errorf("key %s: call %d started on instance %d while call %d runs", a.Key, a.Seq, i, other)
				}
				running[a.Key] = a.Seq
				starts[a.Key] = append(starts[a.Key], a.Seq)
				atOnce++
				maxAtOnce = max(maxAtOnce, atOnce)
				mu.Unlock()
				time.Sleep(2 * time.Millisecond) // the call's work, so that keys overlap
				var err error
				switch {
				case a.Seq%7 == 5:
					err = errors.New("always fails: ends dead")
				case a.Seq%3 == 1 && attempt == 1:
					err = errors.New("fails once: retried")
				}
				mu.Lock() // the key is given up before the outcome is written
				delete(running, a.Key)
				atOnce--
				if err == nil || attempt == 2 {
					ended[a.Key]++
				}
				mu.Unlock()
				return err
			}}
			if err := rts[i].Register(defs[i]); err != nil {
				t.Fatal(err)
			}
		}
		submitted := map[string][]int64{}
		for seq := range perKey {
			for k := range keys {
				i := (seq + k) % instances
				key := fmt.Sprintf("key-%02d", k)
				raw, _ := json.Marshal(orderedArgs{Key: key, Seq: seq})
				c := Call{Task: defs[i], Args: raw, OrderKey: key}
				if (seq+k)%4 == 3 {
					c.RunAt = time.Now().Add(50 * time.Millisecond) // a scheduled call
				}
				var id int64
				var err error
				if (seq+k)%4 == 2 { // through a transaction (the outbox): its commit watcher must not start it
					tx, txErr := rts[i].DB().BeginTx(ctx, nil)
					if txErr != nil {
						t.Fatal(txErr)
					}
					if id, err = rts[i].SubmitTx(ctx, tx, c); err == nil {
						err = tx.Commit()
					}
				} else {
					id, err = rts[i].Submit(ctx, c)
				}
				if err != nil {
					t.Fatalf("submit %s/%d: %v", key, seq, err)
				}
				submitted[key] = append(submitted[key], id)
			}
		}
		waitFor(t, 3*time.Minute, "every ordered call to end", func() bool {
			mu.Lock()
			defer mu.Unlock()
			for k := range keys {
				if ended[fmt.Sprintf("key-%02d", k)] < perKey {
					return false
				}
			}
			return true
		})
		mu.Lock()
		for key, got := range starts {
			var want []int // each call once, a call failing once twice, in submit order
			for seq := range perKey {
				want = append(want, seq)
				if seq%7 == 5 || seq%3 == 1 {
					want = append(want, seq)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("key %s: attempts started in order %v, want %v", key, got, want)
			}
		}
		if maxAtOnce < 2 {
			t.Errorf("at most %d calls ran at once: different keys should run in parallel", maxAtOnce)
		}
		t.Logf("%d keys × %d calls on %d instances: at most %d calls at once", keys, perKey, instances, maxAtOnce)
		mu.Unlock()
		for key, ids := range submitted {
			last := ids[len(ids)-1]
			waitFor(t, time.Minute, "the last call of "+key+" to be written as ended", func() bool {
				task, err := rts[0].Inspector().Get(ctx, last)
				if err != nil {
					t.Fatalf("key %s: last task %d: %v", key, last, err)
				}
				return task.State.Terminal()
			})
		}
	})
}

// TestOrderedKeyWaitsForTheCallAhead: while the first call of a key runs,
// later calls of the key do not start by any path (an immediate Submit,
// SubmitTx's commit watcher, a scheduled call held for its due time), though
// unkeyed calls submitted after them by the same paths run; once it ends,
// they start one by one in submit order.
func TestOrderedKeyWaitsForTheCallAhead(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		cfg := testConfig(dsn)
		// SubmitTx's commit watcher looks for the row for two poll
		// intervals: long enough here that it surely sees the commit.
		cfg.PollInterval = 250 * time.Millisecond
		cfg.Workers = 8 // free workers for every path to start a call with
		rt := startRuntime(t, cfg)
		release := make(chan struct{})
		var mu sync.Mutex
		var started []string
		ran := func(name string) func() bool {
			return func() bool {
				mu.Lock()
				defer mu.Unlock()
				return slices.Contains(started, name)
			}
		}
		def := &TaskDef{Name: "ordered.wait", Policy: fastPolicy(1), Run: func(ctx context.Context, raw []byte) error {
			var a orderedArgs
			if err := json.Unmarshal(raw, &a); err != nil {
				return Undecodable(err)
			}
			mu.Lock()
			started = append(started, a.Key)
			mu.Unlock()
			if a.Key == "first" {
				select {
				case <-release:
				case <-time.After(time.Minute):
					t.Error("the first call was never released")
				}
			}
			return nil
		}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		call := func(name, key string, at time.Time) Call {
			raw, _ := json.Marshal(orderedArgs{Key: name})
			return Call{Task: def, Args: raw, OrderKey: key, RunAt: at}
		}
		submitTx := func(c Call) {
			tx, err := rt.DB().BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rt.SubmitTx(ctx, tx, c); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := rt.Submit(ctx, call("first", "k", time.Time{})); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "the first call to start", ran("first"))
		if _, err := rt.Submit(ctx, call("immediate", "k", time.Time{})); err != nil {
			t.Fatal(err)
		}
		submitTx(call("outbox", "k", time.Time{}))
		due := time.Now().Add(300 * time.Millisecond)
		if _, err := rt.Submit(ctx, call("scheduled", "k", due)); err != nil {
			t.Fatal(err)
		}
		submitTx(call("free-outbox", "", time.Time{}))
		if _, err := rt.Submit(ctx, call("free-scheduled", "", due.Add(50*time.Millisecond))); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "the unkeyed calls to run", func() bool { return ran("free-outbox")() && ran("free-scheduled")() })
		for _, name := range []string{"immediate", "outbox", "scheduled"} {
			if ran(name)() {
				t.Fatalf("%s started while the first call of its key runs (started: %v)", name, started)
			}
		}
		close(release)
		waitFor(t, 30*time.Second, "the key's later calls to run", ran("scheduled"))
		mu.Lock()
		defer mu.Unlock()
		var keyed []string
		for _, s := range started {
			if !strings.HasPrefix(s, "free") {
				keyed = append(keyed, s)
			}
		}
		if want := []string{"first", "immediate", "outbox", "scheduled"}; !slices.Equal(keyed, want) {
			t.Fatalf("keyed calls started %v, want %v", keyed, want)
		}
	})
}
