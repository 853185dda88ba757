package runtime

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// An instance with no handler for a task (a producer-only service, or one
// running older code) owns none of its shards, so the instances that can run
// it are not held back.
func TestProducerOnlyInstanceHoldsNothingBack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		producerCfg := testConfig(dsn)
		producerCfg.InstanceID, producerCfg.Shards, producerCfg.UnknownTaskDelay, producerCfg.StealAfter = "producer", 16, time.Minute, -1
		producer := startRuntime(t, producerCfg)
		workerCfg := testConfig(dsn)
		workerCfg.InstanceID, workerCfg.Shards, workerCfg.StealAfter = "worker", 16, -1
		worker := startRuntime(t, workerCfg)

		var ran atomic.Int32
		def := &TaskDef{Name: "produced", Policy: fastPolicy(2), Run: func(ctx context.Context, args []byte) error { ran.Add(1); return nil }}
		if err := worker.Register(def); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "both instances to see each other and the worker to split \"produced\"", func() bool {
			_, split := splitOf(worker, def.Name)
			return split && len(worker.shards.liveInstances()) == 2 && len(producer.shards.liveInstances()) == 2
		})
		var ids []int64
		for i := range 40 {
			id, err := producer.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`), ShardBy: fmt.Sprint(i)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		for _, id := range ids {
			task := waitState(t, worker, id, StateSucceeded, 10*time.Second)
			if task.ErrorMsg != "" {
				t.Fatalf("task %d: error_msg %q", id, task.ErrorMsg)
			}
		}
		if ran.Load() != 40 {
			t.Fatalf("ran %d, want 40", ran.Load())
		}
	})
}

// An instance whose workers are all stuck keeps its shards, but an idle
// instance takes its overdue tasks after StealAfter.
func TestIdleInstanceStealsOverdueTasks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		stuck := make(chan struct{})
		t.Cleanup(func() { close(stuck) })
		busyCfg := testConfig(dsn)
		busyCfg.InstanceID, busyCfg.Shards, busyCfg.Workers, busyCfg.StealAfter = "busy", 16, 1, -1
		busyCfg.ShutdownTimeout = 100 * time.Millisecond
		busy := startRuntime(t, busyCfg)
		idleCfg := testConfig(dsn)
		idleCfg.InstanceID, idleCfg.Shards, idleCfg.StealAfter = "idle", 16, 300*time.Millisecond
		idle := startRuntime(t, idleCfg)

		var stolen atomic.Int32
		name := "maybe-stuck"
		busy.Register(&TaskDef{Name: name, Policy: fastPolicy(2), Run: func(ctx context.Context, args []byte) error {
			select {
			case <-stuck:
			case <-ctx.Done():
			}
			return ctx.Err()
		}})
		def := &TaskDef{Name: name, Policy: fastPolicy(2), Run: func(ctx context.Context, args []byte) error { stolen.Add(1); return nil }}
		idle.Register(def)
		waitFor(t, 10*time.Second, "both instances to split "+name+" between them", func() bool {
			b, _ := splitOf(busy, name)
			i, _ := splitOf(idle, name)
			return b != nil && i != nil
		})
		busyShards := busy.shards.ownedShards()
		if busyShards == nil || len(busyShards) == 0 {
			t.Fatalf("busy owns %v; want some but not all shards", busyShards)
		}
		// Scheduled a little ahead, so that the submitting instance does not
		// run them at once: each goes to its shard's owner.
		var inBusyShards int
		for i := range 30 {
			c := Call{Task: def, Args: []byte(`{}`), ShardBy: fmt.Sprint(i), RunAt: time.Now().Add(50 * time.Millisecond)}
			if _, err := idle.Submit(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			for _, s := range busyShards {
				if s == idle.shardFor(fmt.Sprint(i)) {
					inBusyShards++
				}
			}
		}
		if inBusyShards < 2 {
			t.Skipf("only %d of 30 tasks fell in the busy instance's shards", inBusyShards)
		}
		// busy takes one and hangs on it; idle runs every other one, its own
		// at once and busy's after StealAfter.
		waitFor(t, 10*time.Second, "29 of 30 tasks run", func() bool { return stolen.Load() >= 29 })
	})
}

// splitOf returns the shards rt owns for task name in its last split, and
// whether a heartbeat has computed a split for name yet (nil shards: all).
func splitOf(rt *Runtime, name string) (shards []int, split bool) {
	rt.shards.mu.RLock()
	defer rt.shards.mu.RUnlock()
	for _, g := range rt.shards.groups {
		if slices.Contains(g.Names, name) {
			return g.Shards, true
		}
	}
	return nil, false
}
