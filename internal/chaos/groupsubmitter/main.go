// Command groupsubmitter is the process the group-commit kill test
// (internal/chaos/group_commit_kill_test.go) SIGKILLs while groups of
// submits are in flight: -callers goroutines submit without pause through
// one argo runtime on an SQLite file (whose driver groups concurrent
// submits into one transaction), and each logs every submit's answer as
// soon as Submit returns, one fsynced line each, so that what a caller was
// told survives the kill.
//
// Log line format (space separated):
//
//	ok <n> <task id>          Submit returned nil with this id
//	dup <n> <task id>         ErrDuplicate (the call reused an earlier call's unique key), the holder's id
//	err <n> <kind>            another error: not-persisted, outcome-unknown or other
//
// Every call n carries {"n": n} as its arguments and, unless it is a
// duplicate on purpose (every -dup-every'th call reuses the unique key of
// the call before it), the unique key "<prefix>-<n>".
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/argo-retry/argo/runtime"
)

// TaskName is the task submitted (Scheduled an hour out: nothing runs).
const TaskName = "chaos.group"

func main() {
	dsn := flag.String("dsn", "", `database, "sqlite:PATH"`)
	logPath := flag.String("log", "", "answer log file")
	callers := flag.Int("callers", 16, "goroutines submitting at once")
	prefix := flag.String("prefix", "p", "unique-key prefix of this incarnation")
	dupEvery := flag.Int("dup-every", 7, "every K-th call reuses the previous call's unique key")
	flag.Parse()
	if *dsn == "" || *logPath == "" {
		fmt.Fprintln(os.Stderr, "groupsubmitter: -dsn and -log are required")
		os.Exit(2)
	}
	f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "groupsubmitter:", err)
		os.Exit(1)
	}
	rt, err := runtime.Start(context.Background(), runtime.Config{DSN: *dsn, AutoMigrate: true, InstanceID: *prefix})
	if err != nil {
		fmt.Fprintln(os.Stderr, "groupsubmitter:", err)
		os.Exit(1)
	}
	def := &runtime.TaskDef{Name: TaskName, Mode: runtime.Scheduled, Delay: time.Hour}
	def.Run = func(context.Context, []byte) error { return nil }
	if err := rt.Register(def); err != nil {
		fmt.Fprintln(os.Stderr, "groupsubmitter:", err)
		os.Exit(1)
	}
	var logMu sync.Mutex
	logLine := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(f, format+"\n", args...)
		f.Sync()
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range *callers {
		wg.Add(1)
		go func() { // runs until the kill
			defer wg.Done()
			for {
				n := next.Add(1)
				key := fmt.Sprintf("%s-%d", *prefix, n)
				if *dupEvery > 0 && n%int64(*dupEvery) == 0 {
					key = fmt.Sprintf("%s-%d", *prefix, n-1)
				}
				args, _ := json.Marshal(map[string]int64{"n": n})
				id, err := rt.Submit(context.Background(), runtime.Call{Task: def, Args: args, UniqueKey: key})
				switch {
				case err == nil:
					logLine("ok %d %d", n, id)
				case errors.Is(err, runtime.ErrDuplicate):
					logLine("dup %d %d", n, id)
				case errors.Is(err, runtime.ErrNotPersisted):
					logLine("err %d not-persisted", n)
				case errors.Is(err, runtime.ErrOutcomeUnknown):
					logLine("err %d outcome-unknown", n)
				default:
					logLine("err %d other", n)
				}
			}
		}()
	}
	wg.Wait()
}
