package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/argo-retry/argo/runtime"
)

// The retry-overhead workload: the same calls end to end (submitted from
// the submitting goroutines while one runtime works them) with no failure,
// with one failure, and with three failures before they succeed, each retry
// due 1 ms after its failure (fixed, no jitter), so that what is measured is
// the cost of a retry (its failure's outcome write and history row, the
// retry's restart), not its delay. The per-retry cost is
// (time with k failures − time with none) / (k × calls), and is set beside
// the cost of one call without failure (time with none / calls): a retry
// costs under 10% of the work when the ratio is under 0.1. Nothing is
// hand-written here: the hand-written queue has no retries.

// retryOverheadName is the task of the workload (a TaskDef of its own, not
// a generated wrapper: the failures per call are its arguments).
const retryOverheadName = "argobench.FailK"

// retryOverheadDelay is the fixed delay before each retry.
const retryOverheadDelay = time.Millisecond

// retryOverheadFailures are the failures per call measured.
var retryOverheadFailures = []int{0, 1, 3}

type failKArgs struct {
	I    int `json:"i"`
	Fail int `json:"fail"`
}

func (b *bencher) retryOverhead(ctx context.Context) error {
	n := b.o.n(10000, 20)
	elapsed := make(map[int][]float64) // failures → seconds per run
	for _, k := range retryOverheadFailures {
		err := b.eachRun(ctx, fmt.Sprintf("retry overhead, %d failures", k), func(ctx context.Context) error {
			el, err := b.argoFailK(ctx, n, k)
			if err != nil {
				return err
			}
			elapsed[k] = append(elapsed[k], secs(el))
			return nil
		}, nil)
		if err != nil {
			return err
		}
	}
	base := newStat(elapsed[0]).Median
	for _, k := range retryOverheadFailures {
		rates := make([]float64, len(elapsed[k]))
		for i, s := range elapsed[k] {
			rates[i] = float64(n) / s
		}
		row := &Row{Workload: "5 retry overhead", Metric: fmt.Sprintf("%d failure(s) per call: tasks/s (%d)", k, n), Unit: UnitRate, Argo: newStat(rates)}
		if k == 0 {
			row.Note = fmt.Sprintf("end to end, each retry due %s after its failure (fixed, no jitter)", retryOverheadDelay)
		}
		b.rep.add(row)
		if k == 0 {
			continue
		}
		perRetry := make([]float64, len(elapsed[k]))
		ratios := make([]float64, len(elapsed[k]))
		for i, s := range elapsed[k] {
			perRetry[i] = (s - base) / float64(k*n)
			ratios[i] = perRetry[i] / (base / float64(n))
		}
		b.rep.add(&Row{Workload: "5 retry overhead", Metric: fmt.Sprintf("%d failure(s): wall time per retry", k), Unit: UnitDuration, Argo: newStat(perRetry),
			Note: fmt.Sprintf("(time − time with no failure) / (%d × calls); a call without failure takes %s", k, fmtDuration(base/float64(n)))})
		r := b.rep.add(&Row{Workload: "5 retry overhead", Metric: fmt.Sprintf("%d failure(s): retry cost / call cost", k), Unit: UnitRatio, Argo: newStat(ratios), Target: "<0.1"})
		r.Met = metIf(r.Argo.Median < 0.1)
	}
	return nil
}

// argoFailK submits n calls that fail k times each before they succeed and
// returns the time from the first submit to the n-th success.
func (b *bencher) argoFailK(ctx context.Context, n, k int) (time.Duration, error) {
	def := &runtime.TaskDef{
		Name:   retryOverheadName,
		Policy: runtime.RetryPolicy{MaxAttempts: k + 1, Backoff: runtime.BackoffFixed, Initial: retryOverheadDelay, Jitter: runtime.Jitter{Kind: runtime.JitterNone}},
		Run: func(ctx context.Context, raw []byte) error {
			var a failKArgs
			if err := json.Unmarshal(raw, &a); err != nil {
				return err
			}
			if _, attempt, _ := runtime.AttemptFrom(ctx); attempt <= a.Fail {
				return errors.New("argobench: this attempt fails")
			}
			return nil
		},
	}
	obs := newDoneObserver(retryOverheadName, n)
	rt, err := b.startArgo(ctx, runtime.Config{Observer: obs})
	if err != nil {
		return 0, err
	}
	defer stopArgo(rt)
	if err := rt.Register(def); err != nil {
		return 0, err
	}
	t0 := time.Now()
	err = parallel(ctx, b.o.submitters, n, func(i int) error {
		raw, _ := json.Marshal(failKArgs{I: i, Fail: k})
		_, err := rt.Submit(ctx, runtime.Call{Task: def, Args: raw})
		return err
	})
	if err != nil {
		return 0, err
	}
	if err := obs.wait(ctx); err != nil {
		return 0, err
	}
	el := time.Duration(obs.at.Load() - t0.UnixNano())
	return el, b.expectSucceeded(ctx, retryOverheadName, n)
}
