package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/argo-retry/argo/cmd/argobench/benchtask"
	"github.com/argo-retry/argo/runtime"
)

// Instructions per call: CPU time per task moves with the machine's load,
// the instructions the client executes do not. With -instructions argobench
// runs itself (a child: -callcost KIND -callcost-n N) under valgrind's
// callgrind, which counts every instruction the process executes, twice
// per kind, with -instrcalls and 4×-instrcalls calls; the difference over
// the difference in calls is the instructions of one call, without the
// start-up both runs share. The kinds are the sync call (one goroutine),
// submit (scheduled calls from the submitting goroutines: the INSERT alone)
// and insert+work (immediate calls worked by the runtime). On SQLite the
// engine runs in the process and is counted; on MySQL only the client is.
// valgrind must be installed (make instructions); nothing else needs it.

// callCostKinds are the kinds -instructions measures, in order.
var callCostKinds = []string{"sync", "submit", "work"}

// instructions measures the instructions per call of each kind and prints them.
func instructions(o *options, stdout, stderr io.Writer) error {
	valgrind, err := exec.LookPath("valgrind")
	if err != nil {
		return errors.New("-instructions needs valgrind (callgrind): sudo apt-get install valgrind")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "argobench-instructions-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lo, hi := o.instrCalls, 4*o.instrCalls
	fmt.Fprintf(stdout, "instructions per call (valgrind --tool=callgrind; (I(%d calls) − I(%d calls)) / %d)\n", hi, lo, hi-lo)
	for _, kind := range callCostKinds {
		var counts [2]int64
		for i, n := range []int{lo, hi} {
			dsn := o.dsn
			if dsn == "" {
				dsn = "sqlite:" + filepath.Join(dir, fmt.Sprintf("%s-%d.db", kind, n))
			}
			out := filepath.Join(dir, fmt.Sprintf("callgrind.%s.%d", kind, n))
			cmd := exec.Command(valgrind, "--tool=callgrind", "--callgrind-out-file="+out, self,
				"-callcost", kind, "-callcost-n", strconv.Itoa(n), "-dsn", dsn, "-force", "-submitters", strconv.Itoa(o.submitters), "-workers", strconv.Itoa(o.workers))
			// Go's asynchronous preemption signals confuse valgrind's timing.
			cmd.Env = append(os.Environ(), "GODEBUG=asyncpreemptoff=1")
			var log strings.Builder
			cmd.Stdout, cmd.Stderr = &log, &log
			start := time.Now()
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%s, %d calls under callgrind: %v\n%s", kind, n, err, log.String())
			}
			if counts[i], err = callgrindTotal(out); err != nil {
				return fmt.Errorf("%s, %d calls: %w", kind, n, err)
			}
			fmt.Fprintf(stderr, "argobench: %s, %d calls: %d instructions (%s under callgrind)\n", kind, n, counts[i], time.Since(start).Round(time.Second))
		}
		fmt.Fprintf(stdout, "  %-7s %10.0f instructions per call\n", kind, float64(counts[1]-counts[0])/float64(hi-lo))
	}
	return nil
}

// callgrindTotal reads the instruction count of a callgrind output file.
func callgrindTotal(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, p := range []string{"totals:", "summary:"} {
			if rest, ok := strings.CutPrefix(line, p); ok {
				fields := strings.Fields(rest)
				if len(fields) > 0 {
					return strconv.ParseInt(fields[0], 10, 64)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no totals line", path)
}

// callCost is the child of -instructions: n calls of kind on emptied
// tables, nothing else.
func callCost(ctx context.Context, o *options, kind string, n int) error {
	admin, dialect, err := runtime.OpenDB(o.dsn)
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, err := runtime.Migrate(ctx, admin, dialect); err != nil {
		return err
	}
	if err := resetTables(ctx, admin, dialect); err != nil {
		return err
	}
	b := &bencher{o: o, dsn: o.dsn, dialect: dialect, admin: admin, log: io.Discard, logger: slog.New(slog.DiscardHandler)}
	switch kind {
	case "sync":
		rt, err := b.startArgo(ctx, runtime.Config{})
		if err != nil {
			return err
		}
		defer stopArgo(rt)
		benchtask.SetHooks(benchtask.Hooks{})
		for i := range n {
			if err := benchtask.SyncCallDurable(ctx, i); err != nil {
				return err
			}
		}
		return nil
	case "submit":
		rt, err := b.startArgo(ctx, runtime.Config{})
		if err != nil {
			return err
		}
		defer stopArgo(rt)
		return parallel(ctx, o.submitters, n, func(i int) error { return benchtask.LaterDurable(ctx, i) })
	case "work":
		_, err := b.argoWork(ctx, runtime.Config{}, n, nil, nil)
		return err
	}
	return fmt.Errorf("-callcost %q: want one of %s", kind, strings.Join(callCostKinds, ", "))
}
