//go:build unix

package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage/sqlitedriver"
	"github.com/argo-retry/argo/internal/testdb"
)

// BenchmarkSQLiteInsertWork is argobench's insert+work on the embedded
// default, in one process: b.N calls submitted from 8 goroutines to a
// runtime with 8 workers, until the last success is recorded; with the
// connections' statement cache on (as runtime.OpenDB opens them) and off
// (sqlitedriver.StmtCacheSize 0: every statement parsed on each call).
// cpu-ns/op is the process's CPU time (user and system) per call, which
// moves less with the host's load than ns/op.
//
//	go test -run '^$' -bench SQLiteInsertWork -benchtime 2000x -count 5 ./runtime/
func BenchmarkSQLiteInsertWork(b *testing.B) {
	for _, c := range []struct {
		name string
		size int
	}{{"stmtcache=on", sqlitedriver.StmtCacheSize}, {"stmtcache=off", 0}} {
		b.Run(c.name, func(b *testing.B) {
			old := sqlitedriver.StmtCacheSize
			sqlitedriver.StmtCacheSize = c.size
			defer func() { sqlitedriver.StmtCacheSize = old }()
			benchInsertWork(b)
		})
	}
}

func benchInsertWork(b *testing.B) {
	obs := &finishCounter{}
	cfg := testConfig(testdb.SQLiteDSN(b))
	cfg.Workers = 8
	cfg.Observer = obs
	rt := startRuntime(b, cfg)
	def := &TaskDef{Name: "bench.work", Policy: fastPolicy(3), Run: func(context.Context, []byte) error { return nil }}
	if err := rt.Register(def); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	submit := func(n int) {
		var wg sync.WaitGroup
		var next atomic.Int64
		for range 8 {
			wg.Go(func() {
				for next.Add(1) <= int64(n) {
					if _, err := rt.Submit(ctx, Call{Task: def, Args: []byte(`{}`)}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	wait := func(n int64) {
		deadline := time.Now().Add(5 * time.Minute)
		for obs.succeeded.Load() < n {
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d calls succeeded in 5 minutes", obs.succeeded.Load(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	submit(50) // warm up: the connections prepare what they run
	wait(50)
	cpu0 := cpuTime()
	b.ResetTimer()
	submit(b.N)
	wait(50 + int64(b.N))
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// finishCounter counts the calls that succeeded.
type finishCounter struct{ succeeded atomic.Int64 }

func (f *finishCounter) Finished(_ string, st State) {
	if st == StateSucceeded {
		f.succeeded.Add(1)
	}
}
func (f *finishCounter) Submitted(string)                                                 {}
func (f *finishCounter) AttemptDone(string, string, string, time.Duration, time.Duration) {}
func (f *finishCounter) AlertFired(string)                                                {}
func (f *finishCounter) LeaseRescued(string)                                              {}
func (f *finishCounter) ClaimError(error)                                                 {}

// cpuTime is the process's CPU time so far, user and system, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
