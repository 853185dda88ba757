// Command argobench measures argo against the same statements written by hand
// with database/sql, against one database, in one run, and prints one table:
// argo's figure, the hand-written figure, and their ratio, each the median of
// -runs runs with the spread (min–max) in parentheses.
//
// Usage:
//
//	go run ./cmd/argobench [-dsn DSN] [-runs 3] [-scale 1.0] [-only sync,insert,...] [-o text|json]
//
// The default database is an embedded SQLite file in a temporary directory.
// With -dsn mysql:USER:PASS@tcp(HOST:PORT)/DB the database (created if
// missing) must be used only for benchmarking: every row of argo_task and
// argo_task_attempt is deleted between runs.
//
// Workloads (-only takes these names):
//
//	sync    one goroutine, 5,000 sequential calls of a generated sync wrapper whose
//	        function succeeds: p50 and p99 per call. Hand-written: INSERT the row,
//	        run the function, UPDATE it done.
//	insert  50,000 submits of a scheduled task (due in an hour, so nothing runs)
//	        from 8 goroutines: submits/s. Hand-written: one INSERT per call.
//	work    the same 50,000 submitted while one runtime works them: end-to-end
//	        tasks/s, each task checked to have run exactly once. Hand-written:
//	        workers claiming as argo does (a plain SELECT of due rows, then one
//	        UPDATE … WHERE id IN (…) AND still pending; SQLite: BEGIN IMMEDIATE +
//	        UPDATE … RETURNING), run, UPDATE done, at the same concurrency.
//	retry   2,000 tasks that fail once with a fixed 1 s retry delay: how late the
//	        second attempt starts against its due time (first failure + 1 s);
//	        once submitted in a burst, once paced (-retryrate per second).
//	retrycost  the same 10,000 calls end to end with no failure, one failure
//	        and three failures before success (each retry due 1 ms later): the
//	        wall time per retry, and its ratio to a call without failure
//	        (retry_overhead.go).
//	schedule 2,000 scheduled calls (mode=schedule) due 2 s after their submit: how
//	        late each starts against its due time; once submitted in a burst,
//	        once paced (-schedulerate per second).
//	claim   the cost of claiming a batch of due tasks with 10k, 100k and 1M finished
//	        or future rows in the table, and with a backlog of due rows; the
//	        claim query's plan (EXPLAIN / EXPLAIN QUERY PLAN).
//	memory  peak resident memory (VmRSS) and Go heap in use while 200k tasks pass
//	        through one runtime (-memtasks; scaled by -scale).
//	audit   statements (and, on MySQL, round trips) per call for each side,
//	        counted by a database/sql driver wrapper, with the time spent in each.
//	whatif  batching the runtime does not do yet, written by hand: concurrent
//	        submits grouped into multi-row INSERTs; shows what it would buy here.
//	cluster (run by default when -dsn names several servers) 10,000 tasks, 20%
//	        failing once, through one runtime on the server list (one writer),
//	        one runtime per server, its own first (all writers), and -single-dsn
//	        (one server): tasks/s, Galera conflicts per 10,000 tasks (cluster.go).
//	console the console's reads (runtime.Inspector) on -rows argo_task rows
//	        (default 100,000; 1000000 for the 1M-row figure) written by
//	        multi-row INSERTs, not Submit: p50 and p95 of the task list (List
//	        of 50 + CountUpTo 10,000) with no filter, by state, name
//	        substring, tenant, unique key and the next page by key, and of
//	        the overview; the plans of the list's statements (console.go).
//
// -scale multiplies every task and row count (-scale 0.1 for a quick run).
//
// -instructions counts the instructions per call of the client side
// (instructions.go) under valgrind's callgrind instead: a figure that does
// not move with the machine's load.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/argo-retry/argo/runtime"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

var allWorkloads = []string{"sync", "insert", "work", "retry", "retrycost", "schedule", "claim", "memory", "audit", "whatif", "cluster", "flow", "order", "console"}

type options struct {
	dsn        string
	runs       int
	scale      float64
	only       map[string]bool
	output     string
	cpuProfile string
	workers    int
	submitters int
	handBatch  int
	memTasks   int
	claims     int
	retryRate  float64
	claimBatch int
	timeout    time.Duration
	keep       bool
	force      bool
	verbose    bool
	label      string
	cluster    clusterOptions
	// -instructions and its child (instructions.go)
	instructions bool
	instrCalls   int
	callCost     string
	callCostN    int

	// scheduleRate: the schedule workload's paced variant, calls per second.
	scheduleRate float64

	// consoleRows: the argo_task rows of the console workload (console.go).
	consoleRows int
}

// n scales a base count, keeping at least lo.
func (o *options) n(base int, lo int) int {
	return max(lo, int(float64(base)*o.scale+0.5))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("argobench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var only string
	fs.StringVar(&o.dsn, "dsn", "", `database: "sqlite:PATH" or "mysql:USER:PASS@tcp(HOST:PORT)/DB" (default: SQLite in a temporary directory)`)
	fs.IntVar(&o.runs, "runs", 3, "runs of each workload; the table shows the median and the spread")
	fs.Float64Var(&o.scale, "scale", 1, "multiplies every task and row count (0.1 for a quick run)")
	fs.StringVar(&only, "only", "", "comma-separated workloads to run: "+strings.Join(allWorkloads, ","))
	fs.StringVar(&o.output, "o", "text", "output format: text or json")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.IntVar(&o.workers, "workers", 16, "argo Config.Workers, and the hand-written side's worker goroutines")
	fs.IntVar(&o.submitters, "submitters", 8, "goroutines submitting in the insert, work and memory workloads")
	fs.IntVar(&o.handBatch, "handbatch", 10, "rows one hand-written worker claims at a time (LIMIT n)")
	fs.IntVar(&o.memTasks, "memtasks", 200_000, "tasks through the runtime in the memory workload (times -scale)")
	fs.Float64Var(&o.retryRate, "retryrate", 200, "retry workload: also run it with the calls spread at this many per second (0: only the burst)")
	fs.Float64Var(&o.scheduleRate, "schedulerate", 200, "schedule workload: also run it with the calls spread at this many per second (0: only the burst)")
	fs.IntVar(&o.claims, "claims", 20, "claims timed per measurement in the claim workload")
	fs.IntVar(&o.claimBatch, "claimbatch", 100, "rows per claim in the claim workload (argo's default Config.ClaimBatch is 100)")
	fs.DurationVar(&o.timeout, "timeout", 15*time.Minute, "give up on one workload run after this long")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary SQLite directory")
	fs.BoolVar(&o.force, "force", false, "run even if argo_task holds rows argobench did not write (they are deleted)")
	fs.StringVar(&o.label, "label", "", "free text recorded in the report, e.g. the revision measured when not built from a git checkout")
	fs.BoolVar(&o.verbose, "v", false, "log argo's warnings and errors to stderr")
	fs.IntVar(&o.consoleRows, "rows", consoleDefaultRows, "console workload: argo_task rows the console's reads are timed on (times -scale; 1000000 for the 1M-row figure)")
	o.cluster.register(fs)
	fs.BoolVar(&o.instructions, "instructions", false, "count instructions per call (sync, submit, insert+work) under valgrind's callgrind instead of timing (make instructions)")
	fs.IntVar(&o.instrCalls, "instrcalls", 100, "-instructions: calls of the shorter run (the longer runs 4×)")
	fs.StringVar(&o.callCost, "callcost", "", "internal: the child of -instructions; run this kind's calls and nothing else")
	fs.IntVar(&o.callCostN, "callcost-n", 0, "internal: calls of -callcost")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || o.runs < 1 || o.scale <= 0 || (o.output != "text" && o.output != "json") || o.workers < 1 || o.submitters < 1 || o.handBatch < 1 || o.claims < 1 || o.claimBatch < 1 || o.consoleRows < 1 {
		fmt.Fprintln(stderr, "argobench: bad usage (see -h)")
		return 2
	}
	if o.callCost != "" {
		if err := callCost(context.Background(), &o, o.callCost, o.callCostN); err != nil {
			fmt.Fprintln(stderr, "argobench:", err)
			return 1
		}
		return 0
	}
	if o.instructions {
		if err := instructions(&o, stdout, stderr); err != nil {
			fmt.Fprintln(stderr, "argobench:", err)
			return 1
		}
		return 0
	}
	o.only = map[string]bool{}
	if only == "" {
		for _, w := range allWorkloads {
			o.only[w] = true
		}
	} else {
		for _, w := range strings.Split(only, ",") {
			w = strings.TrimSpace(w)
			if !slices.Contains(allWorkloads, w) {
				fmt.Fprintf(stderr, "argobench: -only: unknown workload %q (want %s)\n", w, strings.Join(allWorkloads, ","))
				return 2
			}
			o.only[w] = true
		}
	}
	if only == "" && !namesSeveralServers(o.dsn) {
		delete(o.only, "cluster") // one server: nothing to compare
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "argobench:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "argobench:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := bench(context.Background(), &o, stderr)
	if rep != nil {
		if o.output == "json" {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			_ = enc.Encode(rep)
		} else {
			rep.print(stdout)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "argobench:", err)
		return 1
	}
	return 0
}

// bench sets up the database and runs the selected workloads.
func bench(ctx context.Context, o *options, logw io.Writer) (*Report, error) {
	start := time.Now()
	dsn := o.dsn
	if dsn == "" {
		dir, err := os.MkdirTemp("", "argobench-")
		if err != nil {
			return nil, err
		}
		if o.keep {
			fmt.Fprintln(logw, "argobench: SQLite database in", dir)
		} else {
			defer os.RemoveAll(dir)
		}
		dsn = "sqlite:" + filepath.Join(dir, "argobench.db")
	}
	if strings.HasPrefix(dsn, "mysql:") {
		if err := ensureMySQLDatabase(ctx, dsn); err != nil {
			return nil, fmt.Errorf("creating the database: %w", err)
		}
	}
	admin, dialect, err := runtime.OpenDB(dsn)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if _, err := runtime.Migrate(ctx, admin, dialect); err != nil {
		return nil, err
	}
	if !o.force {
		if err := checkBenchDatabase(ctx, admin); err != nil {
			return nil, err
		}
	}
	if err := runtime.NewInspector(admin, dialect).CheckSchema(ctx); err != nil {
		// The argo tables predate this build's schema. They hold only the
		// bench's rows (checked above): recreate them.
		fmt.Fprintf(logw, "argobench: the argo tables are out of date (%v); recreating them\n", err)
		if err := dropArgoTables(ctx, admin); err != nil {
			return nil, err
		}
		if _, err := runtime.Migrate(ctx, admin, dialect); err != nil {
			return nil, err
		}
	}
	hand, _, err := runtime.OpenDB(dsn)
	if err != nil {
		return nil, err
	}
	defer hand.Close()

	env := machineEnv()
	env.Dialect, env.DSN, env.Scale, env.Runs = dialect, runtime.RedactDSN(dsn), o.scale, o.runs
	env.Workers, env.Submitters, env.HandBatch = o.workers, o.submitters, o.handBatch
	env.StartedAt = start.UTC().Format(time.RFC3339)
	env.Label = o.label
	if err := dbEnv(ctx, admin, dialect, &env); err != nil {
		return nil, fmt.Errorf("reading the server's settings: %w", err)
	}
	logger := slog.New(slog.DiscardHandler)
	if o.verbose {
		logger = slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	b := &bencher{o: o, dsn: dsn, dialect: dialect, admin: admin, hand: hand, log: logw, logger: logger, rep: &Report{Env: env}}
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"sync", b.syncCall},
		{"insert", b.insert},
		{"work", b.insertWork},
		{"retry", b.retry},
		{"retrycost", b.retryOverhead},
		{"schedule", b.schedule},
		{"claim", b.claim},
		{"memory", b.memory},
		{"audit", b.audit},
		{"whatif", b.whatIf},
		{"cluster", b.cluster},
		{"flow", b.flowControl},
		{"order", b.orderedKeys},
		{"console", b.console},
	}
	var errs []error
	for _, s := range steps {
		if !o.only[s.name] {
			continue
		}
		b.logf("== %s", s.name)
		if err := s.fn(ctx); err != nil {
			b.logf("%s: FAILED: %v", s.name, err)
			b.rep.Errors = append(b.rep.Errors, fmt.Sprintf("%s: %v", s.name, err))
			errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
		}
	}
	if err := resetTables(ctx, admin, dialect); err != nil {
		errs = append(errs, err)
	}
	b.rep.Env.LoadEnd = loadAvg()
	b.rep.Env.DurationSec = time.Since(start).Seconds()
	return b.rep, errors.Join(errs...)
}
