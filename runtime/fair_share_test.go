package runtime

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fairStarts records the tenant of each attempt, in the order they start.
type fairStarts struct {
	mu     sync.Mutex
	order  []string
	hold   chan struct{} // nil: attempts return at once; else they wait for it to close
	active int
	most   int // most attempts running at once
}

func (s *fairStarts) def(name string) *TaskDef {
	return &TaskDef{Name: name, Policy: fastPolicy(3), Run: func(ctx context.Context, _ []byte) error {
		s.mu.Lock()
		s.order = append(s.order, TenantFrom(ctx))
		s.active++
		s.most = max(s.most, s.active)
		hold := s.hold
		s.mu.Unlock()
		if hold != nil {
			<-hold
		}
		s.mu.Lock()
		s.active--
		s.mu.Unlock()
		return nil
	}}
}

// count returns how many attempts started, and how many of them were
// tenant's.
func (s *fairStarts) count(tenant string) (all, of int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.order {
		if t == tenant {
			of++
		}
	}
	return len(s.order), of
}

// startsBeforeLast returns the starts of other tenants before the last
// start of tenant's n-th task (-1 if fewer than n started).
func (s *fairStarts) startsBeforeLast(tenant string, n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := 0
	for i, t := range s.order {
		if t == tenant {
			if seen++; seen == n {
				return i + 1 - n
			}
		}
	}
	return -1
}

// loadBacklog inserts n due tasks of def for tenant, in one transaction,
// due at due (not through Submit: nothing starts them at insert).
func loadBacklog(t *testing.T, rt *Runtime, def *TaskDef, tenant string, n int, due time.Time) {
	t.Helper()
	p, err := rt.prepare(def)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := rt.store.DB().BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		task := rt.newTask(Call{Task: def, Args: []byte(fmt.Sprintf(`{"i":%d}`, i))}, p, due)
		task.Tenant = tenant
		if err := rt.store.Insert(context.Background(), tx, task); err != nil {
			tx.Rollback()
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// fairConfig: 4 workers, no handler-less flagging of the backlog loaded
// before the handler is registered.
func fairConfig(t *testing.T, dsn string, fair bool) Config {
	cfg := testConfigT(t, dsn)
	cfg.Workers, cfg.TenantFairShare, cfg.UnknownTaskDelay = 4, fair, 10*time.Minute
	return cfg
}

// starvationBacklog is tenant A's backlog in the starvation test: 20,000
// due tasks (each a row insert and an attempt; B's ten wait behind them
// all without fair share).
const starvationBacklog = 20_000

// A tenant with a large backlog (A: 20,000 due tasks, 2,000 on SQLite
// under -race, due first) and one
// with ten (B, due after every one of A's): without fair share B's tasks
// wait behind A's (none of them starts in A's first 1,000 starts); with
// it, with 4 workers and equal weights, every B task starts before
// A's 10+2×4 = 18th start (B gets every other worker; the 2×Workers is the
// order in which attempts claimed together reach their first line).
func TestFairShareStarvation(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(fmt.Sprintf("fair=%v", fair), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, dsn string) {
				cfg := fairConfig(t, dsn, fair)
				rt := startRuntime(t, cfg)
				s := &fairStarts{}
				def := s.def("fair.work")
				now := time.Now()
				backlog := starvationBacklog
				if strings.HasPrefix(dsn, "sqlite:") && raceEnabled() {
					// B's claim on SQLite reads the due index past every
					// one of A's rows, under the write lock: under -race
					// (about 20 times slower) 20,000 of them starve the
					// lease renewals.
					backlog = 2_000
				}
				loadBacklog(t, rt, def, "A", backlog, now.Add(-time.Minute))
				loadBacklog(t, rt, def, "B", 10, now)
				if err := rt.Register(def); err != nil {
					t.Fatal(err)
				}
				if !fair {
					waitFor(t, 60*time.Second, "1,000 starts", func() bool { all, _ := s.count("B"); return all >= 1000 })
					all, b := s.count("B")
					t.Logf("without fair share: %d starts, %d of them B's (B's ten are due after A's %d)", all, b, backlog)
					if b != 0 {
						t.Fatalf("without fair share B started %d tasks in the first %d starts; want 0 (oldest due first)", b, all)
					}
					return
				}
				waitFor(t, 60*time.Second, "B's ten tasks to start", func() bool { _, b := s.count("B"); return b == 10 })
				aBefore := s.startsBeforeLast("B", 10)
				t.Logf("with fair share: A started %d tasks before B's 10th", aBefore)
				if bound := 10 + 2*cfg.Workers; aBefore > bound {
					t.Fatalf("with fair share A started %d tasks before B's last; want at most %d", aBefore, bound)
				}
			})
		})
	}
}

// Under a backlog of both, starts follow the weights: A (weight 3) gets
// 3/4 of the first 200 starts, B (default weight 1) 1/4, within 0.05
// (10 starts: attempts claimed together reach their first line in any
// order).
func TestFairShareWeights(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := fairConfig(t, dsn, true)
		cfg.TenantWeights = map[string]int{"A": 3}
		rt := startRuntime(t, cfg)
		s := &fairStarts{}
		def := s.def("fair.weights")
		now := time.Now()
		loadBacklog(t, rt, def, "A", 500, now.Add(-time.Minute))
		loadBacklog(t, rt, def, "B", 500, now.Add(-time.Minute))
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 60*time.Second, "200 starts", func() bool { all, _ := s.count(""); return all >= 200 })
		s.mu.Lock()
		first := s.order[:200]
		a := 0
		for _, tn := range first {
			if tn == "A" {
				a++
			}
		}
		s.mu.Unlock()
		share := float64(a) / 200
		t.Logf("A (weight 3) started %d of the first 200 (%.3f), B (weight 1) %d", a, share, 200-a)
		if share < 0.70 || share > 0.80 {
			t.Fatalf("A's share of the first 200 starts is %.3f; want 0.75 ± 0.05 (weights 3:1)", share)
		}
	})
}

// Work-conserving: a tenant with fewer due tasks than its share leaves
// the rest to the others, in the same claim, shared among them. A has 1
// due task, B and C 50 each (C's due first), 9 workers held busy, and no
// poll but the one Register starts (PollInterval 1h): that claim gives
// each 3, A's claim comes back 2 short, and the 2 go to B and C, one each:
// A 1, B 4, C 4 running (oldest due first would give C both: B 3, C 5).
func TestFairShareWorkConserving(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := fairConfig(t, dsn, true)
		cfg.Workers, cfg.PollInterval = 9, time.Hour
		rt := startRuntime(t, cfg)
		s := &fairStarts{hold: make(chan struct{})}
		def := s.def("fair.conserving")
		now := time.Now()
		loadBacklog(t, rt, def, "C", 50, now.Add(-2*time.Minute))
		loadBacklog(t, rt, def, "A", 1, now.Add(-time.Minute))
		loadBacklog(t, rt, def, "B", 50, now.Add(-time.Minute))
		t.Cleanup(func() { close(s.hold) })
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "every worker busy", func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.active == cfg.Workers
		})
		all, a := s.count("A")
		_, b := s.count("B")
		_, c := s.count("C")
		if all != cfg.Workers || a != 1 || b != 4 || c != 4 {
			t.Fatalf("running: %d attempts, A %d, B %d, C %d; want %d: A 1, B 4, C 4", all, a, b, c, cfg.Workers)
		}
	})
}

// Work-conserving for tenants not yet seen: the workers no tenant read as
// due took go to a plain claim. With no poll but those the test makes
// (PollInterval 1h), A's one task runs, read as the only tenant due; then
// D's tasks fall due and the poller is poked: the claim, before the next
// read, gives D the 3 free workers.
func TestFairShareWorkConservingUnseen(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := fairConfig(t, dsn, true)
		cfg.PollInterval = time.Hour
		rt := startRuntime(t, cfg)
		s := &fairStarts{hold: make(chan struct{})}
		def := s.def("fair.unseen")
		loadBacklog(t, rt, def, "A", 1, time.Now().Add(-time.Minute))
		t.Cleanup(func() { close(s.hold) })
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "A's task to start", func() bool { _, a := s.count("A"); return a == 1 })
		loadBacklog(t, rt, def, "D", 10, time.Now())
		rt.poke()
		waitFor(t, 30*time.Second, "every worker busy", func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.active == cfg.Workers
		})
		if all, d := s.count("D"); all != cfg.Workers || d != cfg.Workers-1 {
			t.Fatalf("running: %d attempts, %d of D's; want %d, %d of D's", all, d, cfg.Workers, cfg.Workers-1)
		}
	})
}

// Bad weights are refused at Start with what to do; nothing starts.
func TestFairShareConfigRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"weights without the switch", func(c *Config) { c.TenantWeights = map[string]int{"a": 2} }, "set TenantFairShare: true"},
		{"zero weight", func(c *Config) { c.TenantFairShare, c.TenantWeights = true, map[string]int{"a": 0} }, `TenantWeights["a"] is 0: a weight is a whole number from 1 to 1000`},
		{"negative weight", func(c *Config) { c.TenantFairShare, c.TenantWeights = true, map[string]int{"a": -3} }, "from 1 to 1000"},
		{"weight too large", func(c *Config) { c.TenantFairShare, c.TenantWeights = true, map[string]int{"a": 1001} }, "from 1 to 1000"},
		{"tenant too long", func(c *Config) {
			c.TenantFairShare, c.TenantWeights = true, map[string]int{strings.Repeat("x", MaxTenantBytes+1): 2}
		}, "Config.TenantWeights: "},
		{"tenant outside Tenants", func(c *Config) {
			c.TenantFairShare, c.Tenants, c.TenantWeights = true, []string{"a"}, map[string]int{"b": 2}
		}, `weighs "b", which Config.Tenants leaves out`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig("sqlite:" + t.TempDir() + "/fair.db")
			c.set(&cfg)
			rt, err := Start(context.Background(), cfg)
			if err == nil {
				rt.Stop(context.Background())
				t.Fatalf("Start accepted %s", c.name)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Start: %v; want it to say %q", err, c.want)
			}
		})
	}
	cfg := testConfig("sqlite:" + t.TempDir() + "/ok.db")
	cfg.TenantFairShare, cfg.Tenants, cfg.TenantWeights = true, []string{"a", ""}, map[string]int{"a": 1000, "": 1}
	rt, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start with good weights: %v", err)
	}
	rt.Stop(context.Background())
}

// A tenant that starts having tasks due is seen at the next read (at most
// one PollInterval later) and enters at the least virtual time of those
// sharing, not at zero: it earns no credit for the starts the others had
// before it came. A (2,000 due) runs alone for 100 starts, then B's
// backlog falls due (after A's): of the 40 starts after B's first, A gets
// half, within 8. Without the entry rule B took all 40 (its virtual time
// was 100 behind A's); without the periodic read, B started only once A's
// backlog was gone (then all 40 were B's).
func TestFairShareNewcomerNoCredit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := fairConfig(t, dsn, true)
		rt := startRuntime(t, cfg)
		s := &fairStarts{}
		def := s.def("fair.newcomer")
		now := time.Now()
		loadBacklog(t, rt, def, "A", 2000, now.Add(-time.Minute)) // not drained while B's are written
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 60*time.Second, "100 of A's starts", func() bool { all, _ := s.count("A"); return all >= 100 })
		loadBacklog(t, rt, def, "B", 200, time.Now())
		waitFor(t, 60*time.Second, "40 starts after B's first", func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			i := slices.Index(s.order, "B")
			return i >= 0 && len(s.order)-i >= 40
		})
		s.mu.Lock()
		i := slices.Index(s.order, "B")
		a := 0
		for _, tn := range s.order[i : i+40] {
			if tn == "A" {
				a++
			}
		}
		s.mu.Unlock()
		t.Logf("after B's first start: A %d of the next 40, B %d", a, 40-a)
		if a < 12 || a > 28 {
			t.Fatalf("A started %d of the 40 starts after B's first; want 20 ± 8 (B enters at A's virtual time)", a)
		}
	})
}

// Priority comes before fair share: each TaskPriority tier's claim is
// shared among tenants on its own, so the high name's tasks (tenant B's)
// all run before the low name's (tenant A's, due first), one worker.
func TestFairShareWithinPriorityTiers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		producer := startRuntime(t, testConfigT(t, dsn)) // no handlers: stores only
		r := &ranBy{}
		low, high := r.def("fprio.low", ""), r.def("fprio.high", "")
		var ids []int64
		for i, d := range []*TaskDef{low, low, low, high, high, high} {
			tenant := "A"
			if i >= 3 {
				tenant = "B"
			}
			id, err := producer.Submit(context.Background(), Call{Task: d, Args: []byte(`{}`), Tenant: tenant})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		cfg := fairConfig(t, dsn, true)
		cfg.Workers, cfg.TaskPriority = 1, []string{"fprio.high"}
		worker := startRuntime(t, cfg)
		if err := worker.Register(r.def("fprio.low", "w"), r.def("fprio.high", "w")); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			waitState(t, worker, id, StateSucceeded, 15*time.Second)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if want := []string{"fprio.high", "fprio.high", "fprio.high", "fprio.low", "fprio.low", "fprio.low"}; !slices.Equal(r.ord, want) {
			t.Fatalf("run order %v, want %v", r.ord, want)
		}
	})
}
