package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// TestClusterNoDuplicateAttempts runs four runtimes in one process on one
// database, as four instances of a service would: every task ends
// succeeded, no (task, attempt) runs twice, and no task runs concurrently
// with itself.
func TestClusterNoDuplicateAttempts(t *testing.T) {
	t.Run("mysql", func(t *testing.T) { runCluster(t, testdb.MySQLDSN(t), 10000, nil) })
	// Four runtimes writing one SQLite file queue on its lock (busy_timeout
	// sleeps), and the race detector slows the pure-Go SQLite some tenfold:
	// keep that run small under -race.
	sqliteTasks := 2000
	if raceEnabled() {
		sqliteTasks = 500
	}
	t.Run("sqlite", func(t *testing.T) { runCluster(t, testdb.SQLiteDSN(t), sqliteTasks, nil) })
}

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// clusterFailures is how many times task n fails before it succeeds: a third
// of the tasks fail once or twice.
func clusterFailures(n int) int {
	if n%3 != 0 {
		return 0
	}
	return 1 + (n/3)%2
}

type clusterArgs struct {
	N int `json:"n"`
}

func runCluster(t *testing.T, dsn string, tasks int, logger *slog.Logger) {
	const instances = 4
	ctx := context.Background()
	var (
		running   sync.Map // task id → instance running it now
		seen      sync.Map // [2]int64{id, attempt} → instance
		runsBy    [instances]atomic.Int64
		succeeded atomic.Int64
		dups      atomic.Int64
	)
	rts := make([]*Runtime, instances)
	defs := make([]*TaskDef, instances)
	for i := range instances {
		cfg := testConfig(dsn)
		cfg.InstanceID = fmt.Sprintf("cluster-%d", i)
		cfg.Workers = 8
		cfg.PollInterval = 20 * time.Millisecond
		// Long enough that a starved test process never loses a lease: this
		// test is about claims, the chaos test about rescues.
		cfg.LeaseDuration = 20 * time.Second
		if logger != nil {
			cfg.Logger = logger
		}
		rts[i] = startRuntime(t, cfg)
		defs[i] = &TaskDef{Name: "cluster.work", Policy: fastPolicy(5), Run: func(ctx context.Context, raw []byte) error {
			id, attempt, _ := AttemptFrom(ctx)
			if other, loaded := running.LoadOrStore(id, i); loaded {
				dups.Add(1)
				t.Errorf("task %d attempt %d started on instance %d while running on instance %v", id, attempt, i, other)
			} else {
				defer running.Delete(id)
			}
			if other, loaded := seen.LoadOrStore([2]int64{id, int64(attempt)}, i); loaded {
				dups.Add(1)
				t.Errorf("task %d attempt %d ran twice (instances %v and %d)", id, attempt, other, i)
			}
			runsBy[i].Add(1)
			var a clusterArgs
			if err := json.Unmarshal(raw, &a); err != nil {
				return Undecodable(err)
			}
			if attempt <= clusterFailures(a.N) {
				return fmt.Errorf("transient failure %d of task n=%d", attempt, a.N)
			}
			succeeded.Add(1)
			return nil
		}}
		if err := rts[i].Register(defs[i]); err != nil {
			t.Fatal(err)
		}
	}

	start := time.Now()
	// Submit through all instances at once: even n runs at once on the
	// submitting instance (when it has a free worker), odd n is due now but
	// goes through the claim of whichever instance owns its shard.
	ids := make([]int64, tasks)
	var wg sync.WaitGroup
	submitters := 8
	if rts[0].Dialect() == DialectSQLite {
		submitters = 2 // one writer at a time anyway
	}
	for g := range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := g; n < tasks; n += submitters {
				i := n % instances
				raw, _ := json.Marshal(clusterArgs{N: n})
				c := Call{Task: defs[i], Args: raw}
				if n%2 == 1 {
					c.RunAt = time.Now()
				}
				id, err := rts[i].Submit(ctx, c)
				if err != nil {
					t.Errorf("submit %d: %v", n, err)
					return
				}
				ids[n] = id
			}
		}()
	}
	waitGroupDone(t, &wg, 2*time.Minute, "the submitters")
	submitted := time.Since(start)
	if t.Failed() {
		t.FailNow()
	}

	in := rts[0].Inspector()
	deadline := time.Now().Add(4 * time.Minute)
	for {
		counts, err := in.CountByState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if counts[StateSucceeded] == tasks {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v of %d tasks", time.Since(start), counts, tasks)
		}
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(start)

	// Every row: succeeded after exactly its planned failures, and the
	// attempt history agrees.
	var rows []struct {
		ID           int64  `db:"id"`
		ExecuteTimes int    `db:"execute_times"`
		Parameter    string `db:"task_parameter"`
	}
	if err := dbx(rts[0].store).SelectContext(ctx, &rows, "SELECT id, execute_times, task_parameter FROM argo_task WHERE task_status = 3"); err != nil {
		t.Fatal(err)
	}
	wantRuns := 0
	for _, r := range rows {
		var a clusterArgs
		if err := json.Unmarshal([]byte(r.Parameter), &a); err != nil {
			t.Fatal(err)
		}
		if ids[a.N] != r.ID {
			t.Fatalf("row %d has n=%d, which was submitted as task %d", r.ID, a.N, ids[a.N])
		}
		want := clusterFailures(a.N) + 1
		wantRuns += want
		if r.ExecuteTimes != want {
			t.Errorf("task %d (n=%d): execute_times %d, want %d", r.ID, a.N, r.ExecuteTimes, want)
		}
	}
	var histories int // attempt rows, and the succeeded attempts on their task rows
	if err := dbx(rts[0].store).GetContext(ctx, &histories, "SELECT (SELECT COUNT(*) FROM argo_task_attempt WHERE kind = 'attempt') + (SELECT COUNT(*) FROM argo_task WHERE task_status = 3 AND attempt_started_at > 0)"); err != nil {
		t.Fatal(err)
	}
	var total int64
	var per []int64
	for i := range runsBy {
		per = append(per, runsBy[i].Load())
		total += runsBy[i].Load()
	}
	if int(total) != wantRuns || histories != wantRuns || succeeded.Load() != int64(tasks) {
		t.Errorf("runs %d, attempt rows %d, successes %d; want %d, %d, %d", total, histories, succeeded.Load(), wantRuns, wantRuns, tasks)
	}
	for i, n := range per {
		if n == 0 {
			t.Errorf("instance %d ran nothing", i)
		}
	}
	if dups.Load() > 0 {
		t.Errorf("%d duplicate or concurrent runs", dups.Load())
	}
	t.Logf("%s: %d tasks (%d attempts) on %d instances in %s (submitted in %s, %.0f tasks/s); attempts per instance %v",
		rts[0].Dialect(), tasks, total, instances, elapsed.Round(time.Millisecond), submitted.Round(time.Millisecond),
		float64(tasks)/elapsed.Seconds(), per)
}
