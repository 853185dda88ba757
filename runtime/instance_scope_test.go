package runtime

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// ranBy records which instance ran each task.
type ranBy struct {
	mu  sync.Mutex
	got map[int64]string
	ord []string // task names in the order they started
}

func (r *ranBy) def(name, instance string) *TaskDef {
	return &TaskDef{Name: name, Policy: fastPolicy(3), Run: func(ctx context.Context, _ []byte) error {
		id, _, _ := AttemptFrom(ctx)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.got == nil {
			r.got = map[int64]string{}
		}
		r.got[id] = instance
		r.ord = append(r.ord, name)
		return nil
	}}
}

func (r *ranBy) instanceOf(id int64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[id]
}

// scopedInstance starts an instance with scope set by limit, strict
// sharding (no stealing: a task in shards the split gave to an instance
// that may not run it would wait for ever), and handlers for every name.
func scopedInstance(t *testing.T, dsn, id string, r *ranBy, names []string, limit func(*Config)) *Runtime {
	cfg := testConfigT(t, dsn)
	cfg.InstanceID, cfg.StealAfter = id, -1
	limit(&cfg)
	rt := startRuntime(t, cfg)
	var defs []*TaskDef
	for _, n := range names {
		defs = append(defs, r.def(n, id))
	}
	if err := rt.Register(defs...); err != nil {
		t.Fatal(err)
	}
	return rt
}

// Two instances limited to different task names, and two limited to
// different tenants, each with handlers for every name: every task runs,
// each on the instance whose scope it is in, whichever instance submitted
// it. With strict sharding this holds only if the shard split counts an
// instance as a holder of a name only for the names and tenants it runs.
func TestInstanceScopeNamesAndTenants(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		r := &ranBy{}
		all := []string{"scope.a", "scope.b", "scope.t"}
		a := scopedInstance(t, dsn, "names-a", r, all, func(c *Config) { c.TaskNames = []string{"scope.a"} })
		b := scopedInstance(t, dsn, "names-b", r, all, func(c *Config) { c.TaskNames = []string{"scope.b"} })
		acme := scopedInstance(t, dsn, "tenant-acme", r, all, func(c *Config) { c.TaskNames, c.Tenants = []string{"scope.t"}, []string{"acme"} })
		globex := scopedInstance(t, dsn, "tenant-globex", r, all, func(c *Config) { c.TaskNames, c.Tenants = []string{"scope.t"}, []string{"globex", ""} })
		rts := []*Runtime{a, b, acme, globex}
		waitFor(t, 10*time.Second, "every instance to see the four in its shard split", func() bool {
			for _, rt := range rts {
				if len(rt.shards.liveInstances()) != 4 {
					return false
				}
			}
			return true
		})
		want := map[int64]string{}
		defs := map[string]*TaskDef{}
		for _, n := range all {
			defs[n] = r.def(n, "")
		}
		for i := range 24 {
			from := rts[i%len(rts)]
			c := Call{Task: defs[all[i%3]], Args: []byte(`{}`), ShardBy: fmt.Sprint(i)}
			owner := map[string]string{"scope.a": "names-a", "scope.b": "names-b"}[c.Task.Name]
			if c.Task.Name == "scope.t" { // tenants in turn: acme, globex, none
				c.Tenant = []string{"acme", "globex", ""}[(i/3)%3]
				owner = map[string]string{"acme": "tenant-acme", "globex": "tenant-globex", "": "tenant-globex"}[c.Tenant]
			}
			submit := from.Submit
			if i%2 == 1 { // half through SubmitTx (its commit watcher runs only tasks in scope)
				submit = func(ctx context.Context, c Call) (int64, error) { return from.SubmitTx(ctx, from.DB(), c) }
			}
			id, err := submit(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			want[id] = owner
		}
		for id, owner := range want {
			waitState(t, a, id, StateSucceeded, 15*time.Second)
			if got := r.instanceOf(id); got != owner {
				t.Errorf("task %d ran on %q, want %q", id, got, owner)
			}
		}
	})
}

// With TaskPriority, due tasks of the first name are claimed before older
// ones of the others: one worker, three low-priority tasks submitted before
// three high-priority ones, runs the high ones first.
func TestInstanceScopePriorityOrdersClaims(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		producer := startRuntime(t, testConfigT(t, dsn)) // no handlers: stores only
		r := &ranBy{}
		low, high := r.def("prio.low", ""), r.def("prio.high", "")
		var ids []int64
		for _, d := range []*TaskDef{low, low, low, high, high, high} {
			id, err := producer.Submit(context.Background(), Call{Task: d, Args: []byte(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		cfg := testConfigT(t, dsn)
		cfg.Workers, cfg.TaskPriority = 1, []string{"prio.high"}
		worker := startRuntime(t, cfg)
		if err := worker.Register(r.def("prio.low", "w"), r.def("prio.high", "w")); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			waitState(t, worker, id, StateSucceeded, 15*time.Second)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if want := []string{"prio.high", "prio.high", "prio.high", "prio.low", "prio.low", "prio.low"}; !slices.Equal(r.ord, want) {
			t.Fatalf("run order %v, want %v", r.ord, want)
		}
	})
}

// Bad scopes are refused at Start with what to do.
func TestInstanceScopeValidated(t *testing.T) {
	for _, c := range []Config{
		{TaskNames: []string{}},
		{TaskNames: []string{""}},
		{Tenants: []string{}},
		{Tenants: []string{"a\nb"}},
		{TaskPriority: []string{"x", "x"}},
		{TaskNames: []string{"a"}, TaskPriority: []string{"b"}},
	} {
		c.DSN = "sqlite:x"
		if _, err := c.withDefaults(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if got := priorityTiers([]string{"a", "b", "c", "d"}, []string{"c", "x", "a"}); !slices.EqualFunc(got, [][]string{{"c"}, {"a"}, {"b", "d"}}, slices.Equal) {
		t.Errorf("tiers %v, want [[c] [a] [b d]]", got)
	}
}

// A tenant-limited instance with spare workers steals overdue tasks of its
// tenants only: a task of another tenant, due an hour ago, stays pending.
func TestInstanceScopeStealKeepsTenants(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		producer := startRuntime(t, testConfigT(t, dsn)) // no handlers: stores only
		r := &ranBy{}
		def := r.def("steal.t", "")
		ids := map[string]int64{}
		for _, tenant := range []string{"globex", "acme"} {
			id, err := producer.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`), Tenant: tenant, RunAt: time.Now().Add(-time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			ids[tenant] = id
		}
		cfg := testConfigT(t, dsn)
		cfg.Tenants = []string{"acme"}
		acme := startRuntime(t, cfg)
		if err := acme.Register(r.def("steal.t", "acme")); err != nil {
			t.Fatal(err)
		}
		// The poll that claimed acme's task also ran the steal claim (it
		// took fewer than its workers), with globex's task overdue.
		waitState(t, acme, ids["acme"], StateSucceeded, 10*time.Second)
		if task, err := acme.Inspector().Get(context.Background(), ids["globex"]); err != nil || task.State != StatePending || task.LeaseOwner != "" {
			t.Fatalf("globex's task after acme's instance polled: %+v, %v; want pending, unleased", task, err)
		}
	})
}
