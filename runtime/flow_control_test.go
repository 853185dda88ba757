package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// startInstances starts n runtimes on dsn, each running def.
func startInstances(t *testing.T, dsn string, n int, def *TaskDef) []*Runtime {
	t.Helper()
	rts := make([]*Runtime, n)
	for i := range n {
		cfg := testConfig(instanceDSN(dsn, i))
		cfg.InstanceID = fmt.Sprintf("flow-%d", i)
		cfg.Workers = 8
		cfg.LeaseDuration = 20 * time.Second
		rts[i] = startRuntime(t, cfg)
		if err := rts[i].Register(def); err != nil {
			t.Fatal(err)
		}
	}
	return rts
}

// submitN submits n calls of def, spread over rts, and returns the ids.
func submitN(t *testing.T, rts []*Runtime, def *TaskDef, n int) []int64 {
	t.Helper()
	ids := make([]int64, n)
	for i := range n {
		id, err := rts[i%len(rts)].Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
		if err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
		ids[i] = id
	}
	return ids
}

// waitAllSucceeded waits until every task of ids (all of name) has succeeded.
func waitAllSucceeded(t *testing.T, rt *Runtime, name string, ids []int64, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, fmt.Sprintf("%d tasks to succeed", len(ids)), func() bool {
		n := 0
		if err := dbx(rt.store).Get(&n, "SELECT COUNT(*) FROM argo_task WHERE task_status = ? AND task_id = ?", StateSucceeded, name); err != nil {
			t.Fatal(err)
		}
		return n == len(ids)
	})
}

// peakTracker records the most calls running at once.
type peakTracker struct{ now, peak atomic.Int64 }

func (p *peakTracker) enter() {
	n := p.now.Add(1)
	for {
		old := p.peak.Load()
		if n <= old || p.peak.CompareAndSwap(old, n) {
			return
		}
	}
}

func (p *peakTracker) leave() { p.now.Add(-1) }

// Four instances with 8 workers each run a group capped at 3: the calls
// running at once, across the instances, never exceed 3 (a quarter of the
// tasks fail once and retry, through the gated claim too), and every task
// ends succeeded.
func TestFlowCapAcrossInstances(t *testing.T) {
	forEachFlowBackend(t, func(t *testing.T, dsn string) {
		const capN, tasks = 3, 60
		var peak peakTracker
		var failed sync.Map
		def := &TaskDef{Name: "flow.print", Policy: fastPolicy(5), Flow: &FlowControl{Group: "printer", Limit: capN},
			Run: func(ctx context.Context, _ []byte) error {
				peak.enter()
				defer peak.leave()
				time.Sleep(15 * time.Millisecond) // the call's duration
				id, _, _ := AttemptFrom(ctx)
				if _, again := failed.LoadOrStore(id, true); !again && id%4 == 0 {
					return errors.New("printer jammed")
				}
				return nil
			}}
		rts := startInstances(t, dsn, 4, def)
		ids := submitN(t, rts, def, tasks)
		waitAllSucceeded(t, rts[0], def.Name, ids, 60*time.Second)
		t.Logf("observed at most %d calls at once, cap %d, 4 instances × 8 workers", peak.peak.Load(), capN)
		if got := peak.peak.Load(); got > capN {
			t.Fatalf("%d calls ran at once across the instances, cap %d", got, capN)
		}
	})
}

// Four instances start a group's calls at most at its rate: in every
// window of one second, at most burst + rate starts (plus a tenth of a
// second of slack for the gap between a claim and its call), and the whole
// batch takes at least (tasks − burst) / rate.
func TestFlowRateAcrossInstances(t *testing.T) {
	forEachFlowBackend(t, func(t *testing.T, dsn string) {
		const rate, burst, tasks = 20.0, 5, 60
		var mu sync.Mutex
		var starts []time.Time
		def := &TaskDef{Name: "flow.mail", Policy: fastPolicy(3), Flow: &FlowControl{Rate: rate, Burst: burst},
			Run: func(ctx context.Context, _ []byte) error {
				mu.Lock()
				starts = append(starts, time.Now())
				mu.Unlock()
				return nil
			}}
		rts := startInstances(t, dsn, 4, def)
		ids := submitN(t, rts, def, tasks)
		waitAllSucceeded(t, rts[0], def.Name, ids, 60*time.Second)
		mu.Lock()
		defer mu.Unlock()
		slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
		limit := burst + int(rate*1.1)
		worst := 0
		for i, s := range starts {
			n := 0
			for _, o := range starts[i:] {
				if o.Sub(s) < time.Second {
					n++
				}
			}
			worst = max(worst, n)
		}
		span := starts[len(starts)-1].Sub(starts[0])
		t.Logf("%d starts in %s; at most %d in any 1 s window (rate %v/s, burst %d)", len(starts), span, worst, rate, burst)
		if worst > limit {
			t.Fatalf("%d starts within one second, limit %d (rate %v/s, burst %d)", worst, limit, rate, burst)
		}
		if min := time.Duration(float64(tasks-burst-1) / rate * float64(time.Second)); span < min*9/10 {
			t.Fatalf("%d starts took %s, less than %s at %v/s", len(starts), span, min, rate)
		}
	})
}

// downstreamRun is what one run of the outage scenario measured.
type downstreamRun struct {
	callsWhileDown int64
	recovery       time.Duration // from the downstream's return to the last success
	peakPer100ms   int           // most successful attempts admitted within 100 ms after the return
}

// runOutage submits tasks against a fake downstream that is down for
// downFor, then comes back, on two instances, with or without a breaker.
func runOutage(t *testing.T, dsn string, breaker *Breaker, tasks int, downFor time.Duration) downstreamRun {
	var down atomic.Bool
	down.Store(true)
	var callsDown atomic.Int64
	var mu sync.Mutex
	var upStarts []time.Time
	pol := RetryPolicy{MaxAttempts: 1000, Backoff: BackoffFixed, Initial: 50 * time.Millisecond, Jitter: Jitter{Kind: JitterNone}}
	name := "flow.outage.plain"
	var flow *FlowControl
	if breaker != nil {
		name, flow = "flow.outage.breaker", &FlowControl{Group: "downstream", Breaker: breaker}
	}
	def := &TaskDef{Name: name, Policy: pol, Flow: flow, Run: func(ctx context.Context, _ []byte) error {
		if down.Load() {
			callsDown.Add(1)
			return errors.New("downstream unavailable")
		}
		mu.Lock()
		upStarts = append(upStarts, time.Now())
		mu.Unlock()
		return nil
	}}
	rts := startInstances(t, dsn, 2, def)
	ids := submitN(t, rts, def, tasks)
	time.Sleep(downFor) // the outage's length: the scenario, not a synchronisation
	up := time.Now()
	down.Store(false)
	waitAllSucceeded(t, rts[0], def.Name, ids, 60*time.Second)
	mu.Lock()
	defer mu.Unlock()
	r := downstreamRun{callsWhileDown: callsDown.Load(), recovery: upStarts[len(upStarts)-1].Sub(up)}
	// The peak is taken from when each successful attempt was admitted
	// (its claim's attempt_started_at, on the database's clock), not from
	// when its function began: under load the gap between a claim and its
	// call varies by more than the release spacing, which would bunch calls
	// the gate spread out.
	var admitted []Millis
	if err := dbx(rts[0].store).Select(&admitted, "SELECT attempt_started_at FROM argo_task WHERE task_id = ? AND task_status = ? ORDER BY attempt_started_at", def.Name, StateSucceeded); err != nil {
		t.Fatal(err)
	}
	if len(admitted) != tasks || admitted[0] == 0 {
		t.Fatalf("read %d admission times of %d succeeded tasks (first %d), want every task's", len(admitted), tasks, admitted[0])
	}
	for i, s := range admitted {
		n := 0
		for _, o := range admitted[i:] {
			if o-s < 100 {
				n++
			}
		}
		r.peakPer100ms = max(r.peakPer100ms, n)
	}
	return r
}

// A downstream goes down for 2 s and comes back. Without a breaker every
// task retries against it on its backoff (50 ms) the whole time and all
// hit it at once when it returns; with the group's breaker (5 failures
// open it, cool-down 200 ms doubling to 400 ms, release at 20/s) the calls
// while it is down are a few probes, and after it returns the starts are
// spread at the release rate.
func TestFlowBreakerOutage(t *testing.T) {
	forEachFlowBackend(t, func(t *testing.T, dsn string) {
		const tasks = 40
		const downFor = 2 * time.Second
		plain := runOutage(t, dsn, nil, tasks, downFor)
		br := &Breaker{Failures: 5, Window: 10 * time.Second, Cooldown: 200 * time.Millisecond, MaxCooldown: 400 * time.Millisecond,
			ProbeTimeout: 5 * time.Second, ReleaseRate: 20, ReleaseFor: 10 * time.Second}
		// The release goes on past ReleaseFor while the tasks held back wait
		// (TestFlowBreakerReleaseOutlastsReleaseFor has a short one); here it
		// outlasts the release of the 40 tasks (2 s at 20/s) anyway.
		guarded := runOutage(t, dsn, br, tasks, downFor)
		t.Logf("without breaker: %d calls while down, recovery %s, peak %d starts/100 ms after return", plain.callsWhileDown, plain.recovery.Round(time.Millisecond), plain.peakPer100ms)
		t.Logf("with breaker:    %d calls while down, recovery %s, peak %d starts/100 ms after return", guarded.callsWhileDown, guarded.recovery.Round(time.Millisecond), guarded.peakPer100ms)
		if guarded.callsWhileDown*5 > plain.callsWhileDown {
			t.Fatalf("the breaker let %d calls reach the downstream while down, against %d without: want under a fifth", guarded.callsWhileDown, plain.callsWhileDown)
		}
		// 20/s from an empty bucket of one is at most 3 admissions per 100 ms;
		// one more for the probe that closed it, one for the two instances'
		// clock readings.
		if guarded.peakPer100ms > 5 {
			t.Fatalf("after the return %d calls started within 100 ms, release rate 20/s", guarded.peakPer100ms)
		}
		if guarded.recovery > 5*time.Second {
			t.Fatalf("recovery took %s", guarded.recovery)
		}
	})
}

// A callee's Retry-After runs the task again after the wait it named,
// without using one of its policy's attempts: a task with one attempt asked
// to wait twice still succeeds, at attempt 3 of which 2 were deferred (the
// policy counted 1), and its history keeps the deferred calls with their
// wait.
func TestRetryAfterDoesNotUseAttempts(t *testing.T) {
	forEachFlowBackend(t, func(t *testing.T, dsn string) {
		var calls atomic.Int64
		var mu sync.Mutex
		var at []time.Time
		def := &TaskDef{Name: "flow.quota", Policy: fastPolicy(1), Run: func(ctx context.Context, _ []byte) error {
			mu.Lock()
			at = append(at, time.Now())
			mu.Unlock()
			if calls.Add(1) <= 2 {
				return RetryAfter(errors.New("429 quota"), 300*time.Millisecond)
			}
			return nil
		}}
		rts := startInstances(t, dsn, 1, def)
		id := submitN(t, rts, def, 1)[0]
		task := waitState(t, rts[0], id, StateSucceeded, 5*time.Second)
		if task.ExecuteTimes != 3 || task.DeferredTimes != 2 {
			t.Fatalf("succeeded at attempt %d with %d deferred, want 3 and 2 (two deferred calls not counted by the policy)", task.ExecuteTimes, task.DeferredTimes)
		}
		mu.Lock()
		defer mu.Unlock()
		for i := 1; i < len(at); i++ {
			if gap := at[i].Sub(at[i-1]); gap < 250*time.Millisecond {
				t.Fatalf("call %d came %s after the one before, asked to wait 300 ms", i+1, gap)
			}
		}
		hist, err := rts[0].Inspector().Attempts(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		deferred := 0
		for _, a := range hist {
			if a.BackoffMs == 300 {
				deferred++
			}
		}
		if deferred != 2 || len(hist) != 3 {
			t.Fatalf("history %+v: want 2 deferred calls (backoff 300 ms) and the success", hist)
		}
	})
}

// Tasks of one group declared with other values are refused at Register.
func TestFlowGroupConflictRefused(t *testing.T) {
	rt := startRuntime(t, testConfig(testdb.SQLiteDSN(t)))
	a := &TaskDef{Name: "a", Run: func(context.Context, []byte) error { return nil }, Flow: &FlowControl{Group: "g", Limit: 2}}
	b := &TaskDef{Name: "b", Run: func(context.Context, []byte) error { return nil }, Flow: &FlowControl{Group: "g", Limit: 3}}
	if err := rt.Register(a); err != nil {
		t.Fatal(err)
	}
	if err := rt.Register(b); err == nil || !strings.Contains(err.Error(), `flow group "g" is declared by task a`) {
		t.Fatalf("Register of a conflicting group: %v", err)
	}
	bad := &TaskDef{Name: "c", Run: a.Run, Flow: &FlowControl{Burst: 3}}
	if err := rt.Register(bad); err == nil || !strings.Contains(err.Error(), "burst without a rate") {
		t.Fatalf("Register of a burst without rate: %v", err)
	}
}

// Tasks submitted in a transaction are not claimed by id after the commit
// when under flow control: a group limited to one start per second, burst
// one, starts one of three at once and the others a second apart.
func TestFlowSubmitTxGoesThroughTheGate(t *testing.T) {
	forEachFlowBackend(t, func(t *testing.T, dsn string) {
		var mu sync.Mutex
		var starts []time.Time
		def := &TaskDef{Name: "flow.tx", Policy: fastPolicy(3), Flow: &FlowControl{Rate: 1, Burst: 1},
			Run: func(ctx context.Context, _ []byte) error {
				mu.Lock()
				starts = append(starts, time.Now())
				mu.Unlock()
				return nil
			}}
		cfg := testConfig(dsn)
		// The poller reserves one worker per claim, so the commit watcher
		// always finds one free (and would claim by id, were it allowed).
		cfg.Workers, cfg.ClaimBatch = 8, 1
		rt := startRuntime(t, cfg)
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for range 3 {
			// One transaction each, committed at once: the commit watcher
			// (which gives up after two poll intervals) sees every row.
			tx, err := rt.DB().BeginTx(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			id, err := rt.SubmitTx(context.Background(), tx, Call{Task: def, Args: []byte(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		waitAllSucceeded(t, rt, def.Name, ids, 30*time.Second)
		mu.Lock()
		defer mu.Unlock()
		// The gate spaces the claims a second apart; a start is seen when
		// the function begins, some time after its claim (up to a few
		// hundred ms on a loaded machine: a gap of 874 ms was seen), so
		// each gap is held to half a second, and the two together to
		// nearly two. Through an open gate the three start at once.
		for i := 1; i < len(starts); i++ {
			if gap := starts[i].Sub(starts[i-1]); gap < 500*time.Millisecond {
				t.Fatalf("start %d came %s after the one before, rate 1/s", i+1, gap)
			}
		}
		if span := starts[len(starts)-1].Sub(starts[0]); span < 1800*time.Millisecond {
			t.Fatalf("3 starts within %s, rate 1/s burst 1", span)
		}
	})
}

// A probe that ends with a permanent error (the downstream answered, say
// 400) closes the breaker: the downstream is up.
func TestFlowProbePermanentErrorCloses(t *testing.T) {
	forEachFlowBackend(t, func(t *testing.T, dsn string) {
		var calls atomic.Int64
		def := &TaskDef{Name: "flow.probe", Policy: fastPolicy(5),
			Flow: &FlowControl{Group: "api", Breaker: &Breaker{Failures: 1, Window: time.Minute, Cooldown: 100 * time.Millisecond}},
			Run: func(ctx context.Context, _ []byte) error {
				if calls.Add(1) == 1 {
					return errors.New("503")
				}
				return Permanent(errors.New("400 bad request"))
			}}
		rt := startInstances(t, dsn, 1, def)[0]
		id := submitN(t, []*Runtime{rt}, def, 1)[0]
		waitState(t, rt, id, StateDead, 30*time.Second)
		// The probe's outcome reaches the group's row after the task's own
		// (a write of its own): wait for it, then check it closed, once.
		var g FlowGroup
		waitFor(t, 10*time.Second, "the probe's outcome to reach the breaker", func() bool {
			groups, err := rt.Inspector().FlowGroups(context.Background())
			if err != nil || len(groups) != 1 {
				t.Fatalf("flow groups %+v, %v", groups, err)
			}
			g = groups[0]
			return g.Breaker != "half-open"
		})
		if g.Breaker != "closed" || g.Opened != 1 {
			t.Fatalf("after a probe's permanent error: breaker %s, opened %d times; want closed, once", g.Breaker, g.Opened)
		}
	})
}

// Scheduled calls of a capped group are not held for the local timer
// (which starts held calls at their due time, past any gate): calls due at
// the same moment still run at most Limit at once.
func TestFlowScheduledCallsKeepTheCap(t *testing.T) {
	forEachFlowBackend(t, func(t *testing.T, dsn string) {
		const capN, tasks = 1, 6
		var peak peakTracker
		def := &TaskDef{Name: "flow.scheduled", Policy: fastPolicy(3), Flow: &FlowControl{Group: "scanner", Limit: capN},
			Run: func(ctx context.Context, _ []byte) error {
				peak.enter()
				defer peak.leave()
				time.Sleep(20 * time.Millisecond)
				return nil
			}}
		rts := startInstances(t, dsn, 2, def)
		due := time.Now().Add(1500 * time.Millisecond) // within the hold horizon (2 polls)
		ids := make([]int64, tasks)
		for i := range ids {
			id, err := rts[i%len(rts)].Submit(context.Background(), Call{Task: def, Args: []byte(`{}`), RunAt: due})
			if err != nil {
				t.Fatalf("submit %d: %v", i, err)
			}
			ids[i] = id
		}
		waitAllSucceeded(t, rts[0], def.Name, ids, 60*time.Second)
		if got := peak.peak.Load(); got > capN {
			t.Fatalf("%d scheduled calls of a group capped at %d ran at once", got, capN)
		}
	})
}
