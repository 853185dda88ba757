package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
// held for a local timer), some failing once (a retrying call keeps its
// key), some ending dead (the key passes on). Per key, attempts never
// overlap and start in submit order, retries before the next call;
// different keys run at the same time.
func TestOrderedKeysAcrossInstances(t *testing.T) {
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
				id, err := rts[i].Submit(ctx, c)
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
