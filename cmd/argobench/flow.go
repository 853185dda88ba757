package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/argo-retry/argo/cmd/argobench/benchtask"
	"github.com/argo-retry/argo/runtime"
)

// ---------------------------------------------------------------- 5. flow control

// flowRate and flowBurst are benchtask.Rated's rate= and burst=.
const (
	flowRate  = 500.0
	flowBurst = 50
)

// flowControl measures what flow control costs: the same work plain
// (argobench.Work), under a concurrency cap far above the workers
// (argobench.Capped: claimed under a slot grant, with one gated claim a
// second renewing it; storage/flow_grants.go),
// and under a rate limit (argobench.Rated, 500/s): the starts per second
// it held over the whole run (60 s at -scale 1) and in its busiest second.
func (b *bencher) flowControl(ctx context.Context) error {
	n := b.o.n(20000, 200)
	var plain, claimed, capped []float64
	_, _, work, _ := benchtask.Defs()
	viaClaim := func(ctx context.Context, rt *runtime.Runtime, i int) error {
		// Due now but through the claim, as every flow-controlled task is
		// (RunAt keeps Submit from running the first attempt itself).
		_, err := rt.Submit(ctx, runtime.Call{Task: work, Args: []byte(argsJSON(i)), RunAt: time.Now()})
		return err
	}
	err := b.eachRun(ctx, "flow",
		func(ctx context.Context) error {
			el, _, err := b.flowWork(ctx, "argobench.Work", n, direct(benchtask.WorkDurable))
			if err != nil {
				return err
			}
			plain = append(plain, float64(n)/secs(el))
			if err := b.reset(ctx); err != nil {
				return err
			}
			el, _, err = b.flowWork(ctx, "argobench.Work", n, viaClaim)
			if err != nil {
				return err
			}
			claimed = append(claimed, float64(n)/secs(el))
			if err := b.reset(ctx); err != nil {
				return err
			}
			el, _, err = b.flowWork(ctx, "argobench.Capped", n, direct(benchtask.CappedDurable))
			if err != nil {
				return err
			}
			capped = append(capped, float64(n)/secs(el))
			return nil
		}, nil)
	if err != nil {
		return err
	}
	b.rep.add(&Row{Workload: "5 flow control", Metric: fmt.Sprintf("plain: tasks/s end to end (%d)", n), Unit: UnitRate, Argo: newStat(plain),
		Note: "the first attempt runs from Submit, without a claim"})
	b.rep.add(&Row{Workload: "5 flow control", Metric: fmt.Sprintf("plain, claimed: tasks/s (%d)", n), Unit: UnitRate, Argo: newStat(claimed),
		Note: "due now, through the poller's claim"})
	r := b.rep.add(&Row{Workload: "5 flow control", Metric: fmt.Sprintf("capped (limit=100000): tasks/s (%d)", n), Unit: UnitRate, Argo: newStat(capped), Target: "≥0.95× claimed",
		Note: "far below the cap: claimed under a slot grant, renewed by one gated claim a second; ratio against plain, claimed"})
	ratio := r.Argo.Median / newStat(claimed).Median
	r.Ratio = &ratio
	r.Met = metIf(ratio >= 0.95)

	if err := b.reset(ctx); err != nil {
		return err
	}
	// The rate-limited run: once, long enough for its window.
	rn := b.o.n(int(flowRate*60), int(flowRate))
	_, starts, err := b.flowWork(ctx, "argobench.Rated", rn, direct(benchtask.RatedDurable))
	if err != nil {
		return err
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	span := starts[len(starts)-1].Sub(starts[0])
	held := float64(len(starts)-flowBurst) / span.Seconds()
	busiest := 0
	j := 0
	for i := range starts {
		for starts[i].Sub(starts[j]) >= time.Second {
			j++
		}
		busiest = max(busiest, i-j+1)
	}
	r = b.rep.add(&Row{Workload: "5 flow control", Metric: fmt.Sprintf("rate=500/s burst=50: starts/s over %s (%d)", span.Round(time.Second), rn), Unit: UnitRate, Argo: newStat([]float64{held}), Target: "≤500/s"})
	r.Met = metIf(held <= flowRate*1.01)
	// Starts are timed where the function runs, after the claim: a loaded
	// machine bunches them a little (2% allowed).
	r = b.rep.add(&Row{Workload: "5 flow control", Metric: "rate=500/s burst=50: starts in the busiest second", Unit: UnitCount, Argo: newStat([]float64{float64(busiest)}), Target: "≤550 (+2%)",
		Note: "timed at the call, after the claim"})
	r.Met = metIf(float64(busiest) <= (flowRate+flowBurst)*1.02)
	return nil
}

// flowWork submits n calls of one Work-like task while a runtime works
// them, and returns the time to the n-th success and each attempt's start.
func (b *bencher) flowWork(ctx context.Context, name string, n int, submit func(ctx context.Context, rt *runtime.Runtime, n int) error) (time.Duration, []time.Time, error) {
	counts := newExecCounter(n)
	var mu sync.Mutex
	starts := make([]time.Time, 0, n)
	benchtask.SetHooks(benchtask.Hooks{Work: func(ctx context.Context, _ int) {
		at := time.Now()
		id, _, _ := runtime.AttemptFrom(ctx)
		counts.add(id)
		mu.Lock()
		starts = append(starts, at)
		mu.Unlock()
	}})
	obs := newDoneObserver(name, n)
	rt, err := b.startArgo(ctx, runtime.Config{Observer: obs})
	if err != nil {
		return 0, nil, err
	}
	defer stopArgo(rt)
	t0 := time.Now()
	if err := parallel(ctx, b.o.submitters, n, func(i int) error { return submit(ctx, rt, i) }); err != nil {
		return 0, nil, err
	}
	if err := obs.wait(ctx); err != nil {
		return 0, nil, err
	}
	el := time.Duration(obs.at.Load() - t0.UnixNano())
	mu.Lock()
	defer mu.Unlock()
	return el, slices.Clone(starts), counts.check(n)
}

// direct adapts a generated wrapper to flowWork's submit.
func direct(wrapper func(ctx context.Context, n int) error) func(context.Context, *runtime.Runtime, int) error {
	return func(ctx context.Context, _ *runtime.Runtime, n int) error { return wrapper(ctx, n) }
}
