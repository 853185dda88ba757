package main

import (
	"context"
	"fmt"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/argo-retry/argo/cmd/argobench/benchtask"
	"github.com/argo-retry/argo/runtime"
)

// vmRSS returns the process's resident set size in bytes (0 if unknown).
func vmRSS() float64 {
	v := firstField("/proc/self/status", "VmRSS")
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0
	}
	kb, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	return kb * 1024
}

func (b *bencher) memory(ctx context.Context) error {
	n := b.o.n(b.o.memTasks, 20)
	if err := b.reset(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, b.o.timeout)
	defer cancel()
	benchtask.SetHooks(benchtask.Hooks{})
	goruntime.GC()
	debug.FreeOSMemory()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	baseRSS, baseHeap := vmRSS(), float64(ms.HeapInuse)

	obs := newDoneObserver("argobench.Work", n)
	rt, err := b.startArgo(ctx, runtime.Config{Observer: obs})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var peakRSS, peakHeap float64
	marks := []float64{0.25, 0.5, 0.75, 1}
	atMark := make([]float64, len(marks))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms goruntime.MemStats
			goruntime.ReadMemStats(&ms)
			rss := vmRSS()
			done := float64(obs.n.Load()) / float64(n)
			mu.Lock()
			peakRSS, peakHeap = max(peakRSS, rss), max(peakHeap, float64(ms.HeapInuse))
			for i, m := range marks {
				if done >= m && atMark[i] == 0 {
					atMark[i] = rss
				}
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	t0 := time.Now()
	// Keep at most memBacklog submitted tasks unfinished, so that the tasks
	// pass through at the runtime's pace instead of piling up in the table
	// (the work and claim workloads measure the backlog's cost).
	err = parallel(ctx, b.o.submitters, n, func(i int) error {
		for int64(i)-obs.n.Load() >= memBacklog && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		return benchtask.WorkDurable(ctx, i)
	})
	if err == nil {
		err = obs.wait(ctx)
	}
	el := time.Since(t0)
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	stopArgo(rt)
	passed := int(obs.n.Load())
	if err == nil {
		err = b.expectSucceeded(ctx, "argobench.Work", n)
	}
	b.logf("memory: %d of %d tasks in %s", passed, n, el.Round(time.Millisecond))
	mib := func(v float64) string { return fmt.Sprintf("%.0f", v/(1<<20)) }
	var quart []string
	for _, v := range atMark {
		quart = append(quart, mib(v))
	}
	note := fmt.Sprintf("baseline %s MiB; RSS at 25/50/75/100%% done: %s MiB; %.0f tasks/s (at most %d unfinished); 1 run", mib(baseRSS), strings.Join(quart, "/"), float64(passed)/el.Seconds(), memBacklog)
	if err != nil {
		note = fmt.Sprintf("INCOMPLETE (%v): ", err) + note
	}
	r := b.rep.add(&Row{Workload: "6 memory", Metric: fmt.Sprintf("peak RSS, %s tasks through one runtime", fmtCount(passed)), Unit: UnitBytes, Argo: newStat([]float64{peakRSS}), Target: "<100 MiB", Note: note})
	r.Met = metIf(peakRSS < 100<<20)
	b.rep.add(&Row{Workload: "6 memory", Metric: "peak Go heap in use", Unit: UnitBytes, Argo: newStat([]float64{peakHeap}), Note: fmt.Sprintf("baseline %s MiB", mib(baseHeap))})
	if b.dialect == runtime.DialectSQLite {
		b.rep.Notes = append(b.rep.Notes, "memory: on SQLite the RSS includes the embedded database engine and its page caches (8 connections)")
	}
	return err
}

// memBacklog bounds the submitted but unfinished tasks in the memory workload.
const memBacklog = 5000
