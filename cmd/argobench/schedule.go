package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/argo-retry/argo/cmd/argobench/benchtask"
	"github.com/argo-retry/argo/runtime"
)

// ---------------------------------------------------------------- 4b. scheduled-call precision

// scheduledDelay is benchtask.Scheduled's first-delay: longer than the
// default 1s poll, so that a call started by the poll would be up to 1s late.
const scheduledDelay = 2 * time.Second

// schedule measures how late scheduled calls (mode=schedule, due 2s after
// their submit) start against their due time: once submitted in a burst,
// once paced (-schedulerate per second).
func (b *bencher) schedule(ctx context.Context) error {
	n := b.o.n(2000, 20)
	variants := []struct {
		label string
		rate  float64
	}{{"burst", 0}}
	if b.o.scheduleRate > 0 {
		variants = append(variants, struct {
			label string
			rate  float64
		}{fmt.Sprintf("paced %.0f/s", b.o.scheduleRate), b.o.scheduleRate})
	}
	for _, v := range variants {
		var p50, p99, pmax []float64
		err := b.eachRun(ctx, "schedule "+v.label, func(ctx context.Context) error {
			late, err := b.argoSchedule(ctx, n, v.rate)
			if err != nil {
				return err
			}
			s := sortedDurations(late)
			p50 = append(p50, secs(percentile(s, 50)))
			p99 = append(p99, secs(percentile(s, 99)))
			pmax = append(pmax, secs(s[len(s)-1]))
			return nil
		}, nil)
		if err != nil {
			return err
		}
		how := fmt.Sprintf("submitted as fast as %d goroutines can", b.o.submitters)
		if v.rate > 0 {
			how = fmt.Sprintf("submitted at %.0f/s", v.rate)
		}
		const workload = "4b scheduled-call precision"
		b.rep.add(&Row{Workload: workload, Metric: fmt.Sprintf("%s: lateness p50", v.label), Unit: UnitDuration, Argo: newStat(p50), Note: fmt.Sprintf("%d calls %s; each due %s after its submit", n, how, scheduledDelay)})
		r := b.rep.add(&Row{Workload: workload, Metric: fmt.Sprintf("%s: lateness p99", v.label), Unit: UnitDuration, Argo: newStat(p99), Target: "≤10ms"})
		r.Met = metIf(r.Argo.Median <= 0.010)
		b.rep.add(&Row{Workload: workload, Metric: fmt.Sprintf("%s: lateness max", v.label), Unit: UnitDuration, Argo: newStat(pmax)})
	}
	return nil
}

// argoSchedule submits n Scheduled calls (spread evenly at rate per second
// when rate > 0) and returns, per call, how late it started against its due
// time: the time just before its submit + scheduledDelay (the submit takes
// its due time from the runtime's clock before it writes anything). A call
// that runs twice is an error.
func (b *bencher) argoSchedule(ctx context.Context, n int, rate float64) ([]time.Duration, error) {
	submitted := make([]atomic.Int64, n)
	started := make([]atomic.Int64, n)
	var twice atomic.Int64
	benchtask.SetHooks(benchtask.Hooks{Scheduled: func(ctx context.Context, i int) {
		if !started[i].CompareAndSwap(0, time.Now().UnixNano()) {
			twice.Add(1)
		}
	}})
	obs := newDoneObserver("argobench.Scheduled", n)
	rt, err := b.startArgo(ctx, runtime.Config{Observer: obs})
	if err != nil {
		return nil, err
	}
	defer stopArgo(rt)
	t0 := time.Now()
	err = parallel(ctx, b.o.submitters, n, func(i int) error {
		if rate > 0 {
			time.Sleep(time.Until(t0.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
		}
		submitted[i].Store(time.Now().UnixNano())
		return benchtask.ScheduledDurable(ctx, i)
	})
	if err != nil {
		return nil, err
	}
	if err := obs.wait(ctx); err != nil {
		return nil, err
	}
	if k := twice.Load(); k > 0 {
		return nil, fmt.Errorf("exactly-once violated: %d scheduled calls ran more than once", k)
	}
	late := make([]time.Duration, n)
	for i := range n {
		sub, s := submitted[i].Load(), started[i].Load()
		if s == 0 {
			return nil, fmt.Errorf("call %d never started", i)
		}
		late[i] = time.Duration(s - (sub + int64(scheduledDelay)))
	}
	return late, nil
}
