package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

func instanceNames(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("host-%d-%d", i, 4000+i*7)
	}
	return ids
}

// owners maps every shard of [0, n) to its owner, from each instance's own
// splitShards view, and fails unless every shard has exactly one owner.
func owners(t *testing.T, live []string, n int) []string {
	t.Helper()
	out := make([]string, n)
	for _, id := range live {
		for _, s := range splitShards(live, id, n) {
			if s < 0 || s >= n {
				t.Fatalf("%s owns shard %d outside [0, %d)", id, s, n)
			}
			if out[s] != "" {
				t.Fatalf("shard %d owned by both %s and %s (live %v)", s, out[s], id, live)
			}
			out[s] = id
		}
	}
	for s, o := range out {
		if o == "" {
			t.Fatalf("shard %d has no owner (live %v)", s, live)
		}
		if got := shardOwner(live, s); got != o {
			t.Fatalf("shardOwner(%d) = %s, splitShards says %s", s, got, o)
		}
	}
	return out
}

func TestSplitShardsOneOwnerEach(t *testing.T) {
	for _, n := range []int{1, 7, 64, 1024} {
		for k := 1; k <= 9; k++ {
			live := instanceNames(k)
			own := owners(t, live, n)
			if n >= 64*k {
				// Rendezvous hashing is only balanced on average; with 64
				// shards per instance, nobody may be starved.
				count := map[string]int{}
				for _, o := range own {
					count[o]++
				}
				for _, id := range live {
					if c := count[id]; c < n/k/3 {
						t.Errorf("n=%d k=%d: %s owns %d shards, want about %d", n, k, id, c, n/k)
					}
				}
			}
		}
	}
	// Alone, an instance owns everything.
	if got := splitShards([]string{"solo"}, "solo", 64); len(got) != 64 {
		t.Fatalf("alone: %d shards, want 64", len(got))
	}
	// An instance missing from the live list owns nothing.
	if got := splitShards([]string{"a", "b"}, "c", 64); len(got) != 0 {
		t.Fatalf("not live: owns %v", got)
	}
}

func TestSplitShardsDeterministic(t *testing.T) {
	live := instanceNames(5)
	want := owners(t, live, 256)
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		perm := slices.Clone(live)
		r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		if got := owners(t, perm, 256); !slices.Equal(got, want) {
			t.Fatalf("split depends on the order of the live list: %v vs %v", perm, live)
		}
	}
}

func TestSplitShardsMinimalMovement(t *testing.T) {
	const n = 1024
	live := instanceNames(8)
	for k := 1; k < len(live); k++ {
		before := owners(t, live[:k], n)
		after := owners(t, live[:k+1], n)
		joiner := live[k]
		moved := 0
		for s := range n {
			if before[s] == after[s] {
				continue
			}
			moved++
			if after[s] != joiner {
				t.Fatalf("k=%d: shard %d moved from %s to %s, not to the joining %s", k, s, before[s], after[s], joiner)
			}
		}
		// The joiner takes about n/(k+1); allow generous variance.
		if want := n / (k + 1); moved < want/2 || moved > want*2 {
			t.Errorf("k=%d: %d shards moved on join, want about %d", k, moved, want)
		}
		// Leaving is the reverse: only the leaver's shards move.
		for s := range n {
			if after[s] != joiner && before[s] != after[s] {
				t.Fatalf("shard %d of a staying instance moved", s)
			}
		}
	}
}

func TestShardKeyFromShardBy(t *testing.T) {
	dsn := testdb.SQLiteDSN(t)
	cfg := testConfig(dsn)
	cfg.Shards, cfg.PollInterval = 64, time.Second
	rt := startRuntime(t, cfg)
	cfg.InstanceID = "second"
	rt2 := startRuntime(t, cfg)
	ctx := context.Background()
	def := &TaskDef{Name: "later", Mode: Scheduled, Delay: time.Hour}
	shardOf := func(r *Runtime, by string) int {
		id, err := r.Submit(ctx, Call{Task: def, Args: []byte(`{}`), ShardBy: by})
		if err != nil {
			t.Fatal(err)
		}
		task, err := r.Inspector().Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if task.ShardKey < 0 || task.ShardKey >= 64 {
			t.Fatalf("shard_key %d outside [0, 64)", task.ShardKey)
		}
		return task.ShardKey
	}
	distinct := map[int]bool{}
	for i := range 40 {
		by := fmt.Sprintf("order-%d", i)
		s := shardOf(rt, by)
		distinct[s] = true
		if again := shardOf(rt, by); again != s {
			t.Fatalf("ShardBy %q: shard %d then %d", by, s, again)
		}
		if i%4 == 0 {
			if other := shardOf(rt2, by); other != s {
				t.Fatalf("ShardBy %q: shard %d on one instance, %d on another", by, s, other)
			}
		}
	}
	if len(distinct) < 16 {
		t.Fatalf("40 ShardBy values fell on only %d shards", len(distinct))
	}
	spread := map[int]bool{}
	for range 200 {
		spread[shardOf(rt, "")] = true
	}
	if len(spread) < 40 {
		t.Fatalf("200 calls without ShardBy fell on only %d of 64 shards", len(spread))
	}
}

// TestClaimOnlyOwnedShards checks the claim statement itself: given a shard
// list it never returns a row of another shard.
func TestClaimOnlyOwnedShards(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig(dsn)
		cfg.Shards, cfg.PollInterval = 16, time.Second
		rt := startRuntime(t, cfg)
		ctx := context.Background()
		def := &TaskDef{Name: "parked", Mode: Scheduled, Delay: time.Hour}
		perShard := map[int]int{}
		for i := range 160 {
			id, err := rt.Submit(ctx, Call{Task: def, Args: []byte(`{}`), ShardBy: fmt.Sprint(i)})
			if err != nil {
				t.Fatal(err)
			}
			task, _ := rt.Inspector().Get(ctx, id)
			perShard[task.ShardKey]++
		}
		mine := []int{1, 4, 9, 15}
		want := 0
		for _, s := range mine {
			want += perShard[s]
		}
		// Make everything due, as a test of the statement, not of the poller
		// (this runtime has no handler, so its poller leaves "parked" alone
		// only while it is not due).
		future := toMillis(time.Now().Add(time.Hour))
		got := 0
		for {
			tasks, err := rt.store.ClaimDue(ctx, "claimer", future, future+1, 7, []string{"parked"}, mine)
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range tasks {
				if !slices.Contains(mine, task.ShardKey) {
					t.Fatalf("claimed task %d of shard %d, not in %v", task.ID, task.ShardKey, mine)
				}
				if task.State != StateRunning || task.LeaseOwner != "claimer" || task.ExecuteTimes != 1 {
					t.Fatalf("claimed task %+v", task)
				}
			}
			got += len(tasks)
			if len(tasks) == 0 {
				break
			}
		}
		if got != want {
			t.Fatalf("claimed %d tasks of shards %v, want %d", got, mine, want)
		}
		if tasks, err := rt.store.ClaimDue(ctx, "claimer", future, future+1, 7, []string{"parked"}, []int{}); err != nil || len(tasks) != 0 {
			t.Fatalf("claim with no shards: %d tasks, %v", len(tasks), err)
		}
	})
}

// shardedArgs are the arguments of TestShardMovement's task; By is its ShardBy.
type shardedArgs struct {
	N  int    `json:"n"`
	By string `json:"by"`
}

// TestShardMovement runs 1, then 3, then 2 runtimes on MariaDB: after two
// heartbeat intervals of each change, every shard has exactly one owner,
// tasks keep completing throughout, and while membership is stable every
// claimed task is of a shard its runtime owns.
func TestShardMovement(t *testing.T) {
	dsn := testdb.MySQLDSN(t)
	const hb = 200 * time.Millisecond
	const shards = 32
	ctx := context.Background()

	type member struct {
		rt   *Runtime
		def  *TaskDef
		name string
	}
	var (
		mu      sync.RWMutex // held for reading across a Submit: Stop must not race it
		members []*member
		stable  atomic.Bool // membership settled: ownership must match claims
		done    sync.Map    // task id → struct{}
		badRuns atomic.Int32
		runs    atomic.Int32
	)
	newMember := func(name string) *member {
		cfg := testConfig(dsn)
		cfg.InstanceID, cfg.Shards, cfg.Workers, cfg.HeartbeatInterval = name, shards, 4, hb
		cfg.LeaseDuration = 10 * time.Second
		cfg.StealAfter = -1 // strict sharding: this test checks the split itself
		m := &member{name: name}
		m.rt = startRuntime(t, cfg)
		m.def = &TaskDef{Name: "sharded", Mode: Scheduled, Delay: 20 * time.Millisecond, Policy: fastPolicy(3),
			Run: func(ctx context.Context, raw []byte) error {
				runs.Add(1)
				id, _, _ := AttemptFrom(ctx)
				var a shardedArgs
				if err := json.Unmarshal(raw, &a); err != nil {
					return Undecodable(err)
				}
				shard := m.rt.shardFor(a.By)
				if owned := m.rt.shards.ownedShards(); stable.Load() && owned != nil && !slices.Contains(owned, shard) {
					badRuns.Add(1)
					t.Errorf("%s ran task %d of shard %d, outside its shards %v", name, id, shard, owned)
				}
				done.Store(id, struct{}{})
				return nil
			}}
		if err := m.rt.Register(m.def); err != nil {
			t.Fatal(err)
		}
		return m
	}
	live := func() []*member {
		mu.RLock()
		defer mu.RUnlock()
		return slices.Clone(members)
	}

	// A steady stream of submits through whichever runtimes are up.
	var submitted sync.Map // id → shard key
	stopSubmit := make(chan struct{})
	submitterDone := make(chan struct{})
	var nSubmitted atomic.Int32
	go func() {
		defer close(submitterDone)
		for i := 0; ; i++ {
			select {
			case <-stopSubmit:
				return
			case <-time.After(5 * time.Millisecond):
			}
			mu.RLock()
			if len(members) == 0 {
				mu.RUnlock()
				continue
			}
			m := members[i%len(members)]
			a := shardedArgs{N: i, By: fmt.Sprintf("order-%d", i%97)}
			raw, _ := json.Marshal(a)
			id, err := m.rt.Submit(ctx, Call{Task: m.def, Args: raw, ShardBy: a.By})
			mu.RUnlock()
			if err != nil {
				t.Errorf("submit through %s: %v", m.name, err)
				continue
			}
			submitted.Store(id, m.rt.shardFor(a.By))
			nSubmitted.Add(1)
		}
	}()

	countDone := func() int {
		n := 0
		done.Range(func(_, _ any) bool { n++; return true })
		return n
	}
	// splitOK reports whether every shard has exactly one owner among ms,
	// and every member sees exactly ms as live.
	splitOK := func(ms []*member) bool {
		owner := make([]int, shards)
		for _, m := range ms {
			owned := m.rt.shards.ownedShards()
			if owned == nil {
				owned = make([]int, shards)
				for s := range owned {
					owned[s] = s
				}
			}
			for _, s := range owned {
				owner[s]++
			}
			if len(m.rt.shards.liveInstances()) != len(ms) {
				return false
			}
		}
		for _, c := range owner {
			if c != 1 {
				return false
			}
		}
		return true
	}
	var changedAt time.Time
	checkSplit := func(phase string) {
		t.Helper()
		ms := live()
		// Ownership must settle within two heartbeat intervals of the change
		// (slack for a loaded test machine).
		limit := 2*hb + 400*time.Millisecond
		for !splitOK(ms) {
			if time.Since(changedAt) > limit {
				t.Fatalf("%s: shard split not settled %s after the change (limit %s)", phase, time.Since(changedAt).Round(time.Millisecond), limit)
			}
			time.Sleep(5 * time.Millisecond)
		}
		settled := time.Since(changedAt)
		// Attempts claimed under the old split may still be starting.
		time.Sleep(100 * time.Millisecond)
		stable.Store(true)
		// Tasks keep flowing: some complete during the settled phase.
		before := countDone()
		waitFor(t, 10*time.Second, phase+": tasks completing", func() bool { return countDone() >= before+100 })
		if !splitOK(ms) {
			t.Fatalf("%s: shard split changed while membership did not", phase)
		}
		t.Logf("%s: split settled %s after the change; %d tasks done so far", phase, settled.Round(time.Millisecond), countDone())
	}
	change := func(fn func()) {
		stable.Store(false)
		mu.Lock()
		fn()
		mu.Unlock()
		changedAt = time.Now()
	}

	change(func() { members = append(members, newMember("shard-a")) })
	checkSplit("1 instance")
	if owned := members[0].rt.shards.ownedShards(); owned != nil {
		t.Fatalf("alone, shard-a owns %v, want all (nil)", owned)
	}
	change(func() { members = append(members, newMember("shard-b"), newMember("shard-c")) })
	checkSplit("3 instances")
	var stopped *member
	change(func() {
		stopped, members = members[1], []*member{members[0], members[2]}
		if err := stopped.rt.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	})
	checkSplit("2 instances (shard-b stopped)")

	close(stopSubmit)
	receive(t, submitterDone, 30*time.Second, "the submitter to stop")
	total := int(nSubmitted.Load())
	waitFor(t, 30*time.Second, "every submitted task to succeed", func() bool {
		n := 0
		submitted.Range(func(k, _ any) bool {
			if _, ok := done.Load(k); ok {
				n++
			}
			return true
		})
		return n == total
	})
	// The rows agree: succeeded, with the shard ShardBy chose.
	rt := members[0].rt
	submitted.Range(func(k, v any) bool {
		task := waitState(t, rt, k.(int64), StateSucceeded, 10*time.Second)
		if task.ShardKey != v.(int) {
			t.Errorf("task %d: shard_key %d, want %d", task.ID, task.ShardKey, v.(int))
		}
		return true
	})
	t.Logf("%d tasks submitted and succeeded, %d runs, %d runs outside owned shards", total, runs.Load(), badRuns.Load())
}
