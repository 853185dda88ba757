package costgate

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/runtime"
)

// progressEngines are SQLite and, with ARGO_TEST_MYSQL_DSN, MySQL by both
// write paths.
func progressEngines(t *testing.T) []Engine {
	engines := []Engine{SQLiteEngine(func() string { return testdb.SQLiteDSN(t) })}
	if os.Getenv(testdb.EnvMySQLDSN) != "" {
		newDSN := func() string { return strings.TrimPrefix(testdb.MySQLDSN(t), "mysql:") }
		engines = append(engines, MySQLOneTripEngine(newDSN), MySQLTxEngine(newDSN))
	} else {
		t.Logf("%s not set: MySQL is not checked", testdb.EnvMySQLDSN)
	}
	return engines
}

// startCounted starts a runtime on eng counting into a new Counter whose
// statements' texts are kept (texts), with leases of lease.
func startCounted(t *testing.T, eng Engine, lease time.Duration, defs ...*runtime.TaskDef) (*env, func() []string) {
	t.Helper()
	c := NewCounter()
	var mu sync.Mutex
	var texts []string
	c.Log = func(_, text string) {
		mu.Lock()
		texts = append(texts, text)
		mu.Unlock()
	}
	cfg, userDB, err := eng.open(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { userDB.Close() })
	done := newDoneObserver()
	cfg.AutoMigrate = true
	cfg.Workers = 1
	cfg.PollInterval = time.Hour
	cfg.HeartbeatInterval = time.Hour
	cfg.RescueInterval = time.Hour
	cfg.MaintenanceInterval = time.Hour
	cfg.LeaseDuration = lease
	cfg.Observer = done
	cfg.Logger = slog.New(slog.DiscardHandler)
	rt, err := runtime.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = rt.Stop(ctx)
	})
	if err := rt.Register(defs...); err != nil {
		t.Fatal(err)
	}
	return &env{rt: rt, userDB: userDB, c: c, done: done}, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), texts...)
	}
}

// A task reporting progress every millisecond for 2.5 s, under leases
// renewed every 500 ms, has its progress written only by renewals — each
// report-carrying statement is a renewal, no statement of its own — at
// most once per runtime.ProgressInterval (counted with the statement
// counter), and its last report by the finish; the row ends with it.
func TestProgressThrottledOnRenewals(t *testing.T) {
	for _, eng := range progressEngines(t) {
		t.Run(eng.Name, func(t *testing.T) {
			const runFor = 2500 * time.Millisecond
			var reports int
			var last string
			var started, ended time.Time
			def := &runtime.TaskDef{Name: "cost.progress", Policy: runtime.RetryPolicy{MaxAttempts: 1, Backoff: runtime.BackoffFixed, Initial: time.Millisecond, Multiplier: 1, MaxDelay: time.Second}, Run: func(ctx context.Context, _ []byte) error {
				started = time.Now()
				for time.Since(started) < runFor {
					reports++
					last = fmt.Sprintf("step %d", reports)
					if err := runtime.ReportProgress(ctx, float64(reports%1000)/1000, last); err != nil {
						return err
					}
					time.Sleep(time.Millisecond) // pacing the reports, not waiting for anything
				}
				ended = time.Now()
				return nil
			}}
			e, texts := startCounted(t, eng, 1500*time.Millisecond, def)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			id, err := e.rt.Submit(ctx, runtime.Call{Task: def, Args: []byte(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.done.wait(ctx, 1); err != nil {
				t.Fatal(err)
			}
			if err := e.quiet(ctx, 50*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			var renewals, carrying, writes int
			for _, q := range texts() {
				renewal := strings.Contains(q, "SET lease_until = ")
				if renewal {
					renewals++
				}
				if strings.Contains(q, "progress = CASE") {
					carrying++
					if !renewal {
						t.Fatalf("a statement writes progress without renewing leases: %.300s", q)
					}
				}
				if strings.Contains(q, "UPDATE") && strings.Contains(q, "progress_note = ") {
					writes++
				}
			}
			elapsed := ended.Sub(started)
			most := int(elapsed/runtime.ProgressInterval) + 1
			t.Logf("%d reports in %v: %d renewals, %d of them carrying progress (at most %d), %d statements writing progress in all", reports, elapsed.Round(time.Millisecond), renewals, carrying, most, writes)
			if carrying < 2 || carrying > most {
				t.Fatalf("%d renewals carried progress in %v (of %d renewals, %d reports); want 2 to %d: at most one per %v", carrying, elapsed, renewals, reports, most, runtime.ProgressInterval)
			}
			if writes != carrying+1 {
				t.Fatalf("%d statements wrote progress; want the %d renewals that carried it and the finish", writes, carrying)
			}
			row, err := e.rt.Inspector().Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if row.State != runtime.StateSucceeded || row.ProgressNote != last || row.ProgressAttempt != 1 {
				t.Fatalf("row: %s, note %q attempt %d; want succeeded with the last report %q", row.State, row.ProgressNote, row.ProgressAttempt, last)
			}
		})
	}
}

// A task that reports progress a thousand times and ends before any
// renewal costs exactly the statements and round trips of one that
// reports none: the reports cost nothing of their own, and the last rides
// on the finish.
func TestProgressCostsNoStatement(t *testing.T) {
	for _, eng := range progressEngines(t) {
		t.Run(eng.Name, func(t *testing.T) {
			run := func(report bool) func(ctx context.Context, _ []byte) error {
				return func(ctx context.Context, _ []byte) error {
					for i := range 1000 {
						if report {
							if err := runtime.ReportProgress(ctx, float64(i)/1000, "working"); err != nil {
								return err
							}
						}
					}
					return nil
				}
			}
			pol := runtime.RetryPolicy{MaxAttempts: 1, Backoff: runtime.BackoffFixed, Initial: time.Millisecond, Multiplier: 1, MaxDelay: time.Second}
			plain := &runtime.TaskDef{Name: "cost.plain", Policy: pol, Run: run(false)}
			reporting := &runtime.TaskDef{Name: "cost.reporting", Policy: pol, Run: run(true)}
			e, _ := startCounted(t, eng, 30*time.Second, plain, reporting)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			measure := func(def *runtime.TaskDef) (Counts, int64) { return e.measureOne(t, ctx, def, []byte(`{}`)) }
			measure(plain) // warm-up: connections, caches
			measure(reporting)
			p, _ := measure(plain)
			r, id := measure(reporting)
			if r.Statements != p.Statements || r.Trips != p.Trips || r.Commits != p.Commits {
				t.Fatalf("a reporting task cost %d statements, %d trips, %d commits; a plain one %d, %d, %d (kinds %v vs %v)", r.Statements, r.Trips, r.Commits, p.Statements, p.Trips, p.Commits, r.Kinds, p.Kinds)
			}
			row, err := e.rt.Inspector().Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if row.Progress != 0.999 || row.ProgressNote != "working" || row.ProgressAttempt != 1 {
				t.Fatalf("the reporting task's row: progress %v %q attempt %d; want its last report 0.999", row.Progress, row.ProgressNote, row.ProgressAttempt)
			}
			t.Logf("%d statements, %d trips, %d commits per task, reporting or not", r.Statements, r.Trips, r.Commits)
		})
	}
}

// measureOne counts what one call of def with args costs, from a quiet
// runtime to a quiet runtime after its task ended, and returns its id.
func (e *env) measureOne(t *testing.T, ctx context.Context, def *runtime.TaskDef, args []byte) (Counts, int64) {
	t.Helper()
	if err := e.quiet(ctx, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	before := e.c.Snapshot()
	base := e.done.total()
	id, err := e.rt.Submit(ctx, runtime.Call{Task: def, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.done.wait(ctx, base+1); err != nil {
		t.Fatal(err)
	}
	if err := e.quiet(ctx, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	return e.c.Snapshot().Sub(before), id
}
