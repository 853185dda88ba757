package main

import (
	"context"
	"fmt"
	"time"

	"github.com/argo-retry/argo/cmd/argobench/benchtask"
	"github.com/argo-retry/argo/runtime"
)

// ---------------------------------------------------------------- 7. ordered keys

// orderKeys is the number of keys of the ordered run that shares keys: each
// key has n/orderKeys calls, run one at a time.
const orderKeys = 200

// orderedKeys measures what ordered keys (Call.OrderKey) cost: the same
// work due now through the claim without a key (the claim every keyed call
// goes through), with a key of its own per call (the order gate's cost
// alone: nothing waits), and over orderKeys keys (calls of a key wait for
// each other; the keys run in parallel).
func (b *bencher) orderedKeys(ctx context.Context) error {
	n := b.o.n(20000, 200)
	var claimed, ownKey, shared []float64
	_, _, work, _ := benchtask.Defs()
	submit := func(key func(i int) string) func(ctx context.Context, rt *runtime.Runtime, i int) error {
		return func(ctx context.Context, rt *runtime.Runtime, i int) error {
			_, err := rt.Submit(ctx, runtime.Call{Task: work, Args: []byte(argsJSON(i)), RunAt: time.Now(), OrderKey: key(i)})
			return err
		}
	}
	runs := []struct {
		out *[]float64
		key func(i int) string
	}{
		{&claimed, func(int) string { return "" }},
		{&ownKey, func(i int) string { return fmt.Sprintf("call-%d", i) }},
		{&shared, func(i int) string { return fmt.Sprintf("key-%d", i%orderKeys) }},
	}
	err := b.eachRun(ctx, "order", func(ctx context.Context) error {
		for _, r := range runs {
			el, _, err := b.flowWork(ctx, "argobench.Work", n, submit(r.key))
			if err != nil {
				return err
			}
			*r.out = append(*r.out, float64(n)/secs(el))
			if err := b.reset(ctx); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if err != nil {
		return err
	}
	base := newStat(claimed).Median
	b.rep.add(&Row{Workload: "7 ordered keys", Metric: fmt.Sprintf("unordered, claimed: tasks/s (%d)", n), Unit: UnitRate, Argo: newStat(claimed),
		Note: "due now, through the poller's claim, no key"})
	r := b.rep.add(&Row{Workload: "7 ordered keys", Metric: fmt.Sprintf("a key per call: tasks/s (%d)", n), Unit: UnitRate, Argo: newStat(ownKey),
		Note: "the order gate's cost alone (nothing waits); ratio against unordered"})
	gateRatio := r.Argo.Median / base
	r.Ratio = &gateRatio
	r = b.rep.add(&Row{Workload: "7 ordered keys", Metric: fmt.Sprintf("%d keys: tasks/s (%d)", orderKeys, n), Unit: UnitRate, Argo: newStat(shared),
		Note: "a key's calls one at a time, keys in parallel; ratio against unordered"})
	sharedRatio := r.Argo.Median / base
	r.Ratio = &sharedRatio
	return nil
}
