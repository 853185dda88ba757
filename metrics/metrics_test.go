package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/internal/testwait"
	"github.com/argo-retry/argo/metrics"
	"github.com/argo-retry/argo/runtime"
)

func fast(maxAttempts int) runtime.RetryPolicy {
	return runtime.RetryPolicy{MaxAttempts: maxAttempts, Backoff: runtime.BackoffFixed, Initial: 10 * time.Millisecond, Jitter: runtime.Jitter{Kind: runtime.JitterNone}}
}

func testConfig(dsn string) runtime.Config {
	return runtime.Config{
		DSN: dsn, AutoMigrate: true, PollInterval: 20 * time.Millisecond, LeaseDuration: 2 * time.Second,
		HeartbeatInterval: 200 * time.Millisecond, ShutdownTimeout: 5 * time.Second, Logger: quiet(),
	}
}

// waitFinal waits until every id is in a final state.
func waitFinal(t *testing.T, in *runtime.Inspector, ids ...int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, id := range ids {
		var last runtime.State
		final := testwait.Until(time.Until(deadline), func() bool {
			task, err := in.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			last = task.State
			return last == runtime.StateSucceeded || last == runtime.StateRecovered || last == runtime.StateDead
		})
		if !final {
			t.Fatalf("task %d still %s", id, last)
		}
	}
}

// TestCountsAfterKnownRun runs a known workload with the collector as the
// runtime's Observer, then scrapes it.
func TestCountsAfterKnownRun(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			m := metrics.New(metrics.Options{})
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(m)

			cfg := testConfig(b.DSN)
			cfg.Observer = m
			rt, err := runtime.Start(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Stop(ctx)

			var flakyCalls atomic.Int32
			ok := &runtime.TaskDef{Name: "ok", Policy: fast(3), Run: func(context.Context, []byte) error { return nil }}
			flaky := &runtime.TaskDef{Name: "flaky", Policy: fast(5), Run: func(context.Context, []byte) error {
				if flakyCalls.Add(1) <= 2 {
					return errors.New("peer down")
				}
				return nil
			}}
			doomed := &runtime.TaskDef{Name: "doomed", Policy: fast(2), Alert: "executeTimes >= 1",
				Run: func(context.Context, []byte) error { return errors.New("always") }}
			fb := &runtime.TaskDef{Name: "fb", Policy: fast(3),
				Run:      func(context.Context, []byte) error { return runtime.Permanent(errors.New("HTTP 400")) },
				Fallback: func(context.Context, []byte, error) error { return nil }, FallbackName: "byHand"}
			if err := rt.Register(ok, flaky, doomed, fb); err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, d := range []*runtime.TaskDef{ok, ok, ok, flaky, doomed, fb} {
				id, err := rt.Submit(ctx, runtime.Call{Task: d, Args: []byte(`{}`)})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			db, dialect, err := runtime.OpenDB(b.DSN)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			in := runtime.NewInspector(db, dialect)
			waitFinal(t, in, ids...)
			// Stop waits for running attempts, so every event has been observed.
			if err := rt.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			m.SetInspector(in)

			want := `
# HELP argo_tasks_submitted_total Tasks written to argo_task by this process.
# TYPE argo_tasks_submitted_total counter
argo_tasks_submitted_total{task="doomed"} 1
argo_tasks_submitted_total{task="fb"} 1
argo_tasks_submitted_total{task="flaky"} 1
argo_tasks_submitted_total{task="ok"} 3
# HELP argo_attempts_total Attempts (kind attempt) and fallback runs (kind fallback) that ended, by outcome: succeeded, failed, permanent, panicked, timeout.
# TYPE argo_attempts_total counter
argo_attempts_total{kind="attempt",outcome="failed",task="doomed"} 2
argo_attempts_total{kind="attempt",outcome="failed",task="flaky"} 2
argo_attempts_total{kind="attempt",outcome="permanent",task="fb"} 1
argo_attempts_total{kind="attempt",outcome="succeeded",task="flaky"} 1
argo_attempts_total{kind="attempt",outcome="succeeded",task="ok"} 3
argo_attempts_total{kind="fallback",outcome="succeeded",task="fb"} 1
# HELP argo_tasks_finished_total Tasks that reached a final state (succeeded, recovered, dead) in this process.
# TYPE argo_tasks_finished_total counter
argo_tasks_finished_total{state="dead",task="doomed"} 1
argo_tasks_finished_total{state="recovered",task="fb"} 1
argo_tasks_finished_total{state="succeeded",task="flaky"} 1
argo_tasks_finished_total{state="succeeded",task="ok"} 3
# HELP argo_alerts_fired_total Alert expressions that held (the alert action was queued).
# TYPE argo_alerts_fired_total counter
argo_alerts_fired_total{task="doomed"} 2
# HELP argo_claim_errors_total Failed claims of due tasks (the database did not answer, say).
# TYPE argo_claim_errors_total counter
argo_claim_errors_total 0
# HELP argo_tasks Tasks in argo_task by state, read at scrape time.
# TYPE argo_tasks gauge
argo_tasks{state="blocked"} 0
argo_tasks{state="dead"} 1
argo_tasks{state="discarded"} 0
argo_tasks{state="exhausted"} 0
argo_tasks{state="falling_back"} 0
argo_tasks{state="pending"} 0
argo_tasks{state="recovered"} 1
argo_tasks{state="retrying"} 0
argo_tasks{state="running"} 0
argo_tasks{state="skipped"} 0
argo_tasks{state="succeeded"} 4
# HELP argo_dead_tasks Dead tasks in argo_task not requeued (the dead letters an operator should requeue or discard), per tenant ("": none), read at scrape time.
# TYPE argo_dead_tasks gauge
argo_dead_tasks{tenant=""} 1
# HELP argo_inspector_up 1 if the last scrape-time read of argo_task succeeded, else 0.
# TYPE argo_inspector_up gauge
argo_inspector_up 1
`
			names := []string{"argo_tasks_submitted_total", "argo_attempts_total", "argo_tasks_finished_total", "argo_alerts_fired_total",
				"argo_claim_errors_total", "argo_lease_rescues_total", "argo_tasks", "argo_dead_tasks", "argo_inspector_up"}
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
				t.Fatal(err)
			}

			// Histograms: one duration sample per attempt and fallback run,
			// one lag sample per attempt (9 attempts: 3 ok, 3 flaky, 2 doomed, 1 fb).
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			counts := map[string]uint64{}
			for _, mf := range mfs {
				for _, mt := range mf.GetMetric() {
					if h := mt.GetHistogram(); h != nil {
						key := mf.GetName()
						for _, l := range mt.GetLabel() {
							key += fmt.Sprintf(",%s=%s", l.GetName(), l.GetValue())
						}
						counts[key] = h.GetSampleCount()
					}
				}
			}
			wantCounts := map[string]uint64{
				"argo_attempt_lag_seconds":                              9,
				"argo_attempt_duration_seconds,kind=attempt,task=ok":    3,
				"argo_attempt_duration_seconds,kind=attempt,task=flaky": 3,
				"argo_attempt_duration_seconds,kind=fallback,task=fb":   1,
			}
			for k, v := range wantCounts {
				if counts[k] != v {
					t.Errorf("%s sample count = %d, want %d (all: %v)", k, counts[k], v, counts)
				}
			}
			if n := testutil.CollectAndCount(m, "argo_lease_rescues_total"); n != 0 {
				t.Errorf("lease rescues reported: %d series", n)
			}
		})
	}
}

// TestScrapeErrorIsReported: a failing scrape-time read does not fail the
// scrape; it shows as argo_inspector_up 0 and argo_inspector_errors_total.
func TestScrapeErrorIsReported(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			db, dialect, err := runtime.OpenDB(b.DSN)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			// No migration: argo_task does not exist.
			m := metrics.New(metrics.Options{Inspector: runtime.NewInspector(db, dialect), ScrapeTimeout: time.Second})
			reg := prometheus.NewRegistry()
			reg.MustRegister(m)
			m.ClaimError(errors.New("db down"))
			for range 2 {
				if _, err := reg.Gather(); err != nil {
					t.Fatalf("scrape failed: %v", err)
				}
			}
			want := `
# HELP argo_inspector_up 1 if the last scrape-time read of argo_task succeeded, else 0.
# TYPE argo_inspector_up gauge
argo_inspector_up 0
# HELP argo_inspector_errors_total Scrape-time reads of argo_task that failed or timed out (argo_tasks and argo_dead_tasks were left out).
# TYPE argo_inspector_errors_total counter
argo_inspector_errors_total 3
# HELP argo_claim_errors_total Failed claims of due tasks (the database did not answer, say).
# TYPE argo_claim_errors_total counter
argo_claim_errors_total 1
`
			// Two gathers above and this one: three failed reads.
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "argo_inspector_up", "argo_inspector_errors_total", "argo_claim_errors_total", "argo_tasks", "argo_dead_tasks"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestUnreachableDatabaseScrapeIsBounded: an unreachable database costs a
// scrape at most the scrape timeout.
func TestUnreachableDatabaseScrapeIsBounded(t *testing.T) {
	db, dialect, err := runtime.OpenDB("mysql:root@tcp(10.255.255.1:3306)/argo?timeout=30s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := metrics.New(metrics.Options{Inspector: runtime.NewInspector(db, dialect), ScrapeTimeout: 200 * time.Millisecond})
	start := time.Now()
	if v := testutil.ToFloat64(prometheus.CollectorFunc(func(ch chan<- prometheus.Metric) {
		c := make(chan prometheus.Metric, 100)
		m.Collect(c)
		close(c)
		for mt := range c {
			if strings.Contains(mt.Desc().String(), `"argo_inspector_up"`) {
				ch <- mt
			}
		}
	})); v != 0 {
		t.Fatalf("argo_inspector_up = %v, want 0", v)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("scrape took %s with a 200ms scrape timeout", d)
	}
}
