package faultcheck

import (
	"fmt"
	"math/rand/v2"

	"github.com/argo-retry/argo/runtime"
)

// FeatureFair puts tenants in the workload and turns fair share between
// them on in some workers (issue #28 item 5, runtime.Config.TenantFairShare,
// docs/tenants-fair-share.md): every fourth operation of a slot is a burst
// of 3–6 calls of a heavy tenant or one call of a light one (or of none),
// and the workers of even slots claim with fair share (the light tenant
// weighing 2), next to the others, which claim oldest due first. Every
// existing invariant must keep holding: fair share changes only which
// tenant's due rows a claim takes first, through the same claim, fences
// and leases. No fairness invariant: the shares of starts under kills,
// restarts (a restarted worker's virtual times start again), partitions
// and workers that claim oldest first beside the fair ones are not a
// property the history can check honestly; that every call of either
// tenant ends is the checker's bound.
const FeatureFair = "fair"

// The workload's tenants under FeatureFair.
const (
	TenantHeavy = "t-heavy"
	TenantLight = "t-light"
)

// FairSlot reports whether the worker of slot claims with fair share
// under FeatureFair: the even slots.
func FairSlot(slot int) bool { return slot%2 == 0 }

// FairConfig turns fair share on in cfg, the light tenant weighing 2.
func FairConfig(cfg *runtime.Config) {
	cfg.TenantFairShare = true
	cfg.TenantWeights = map[string]int{TenantLight: 2}
}

// fairOperation returns the calls of operation k of a slot under
// FeatureFair, or nil when k is not one of its operations (k%4 != 3).
// The draws come from their own generator, seeded with (seed, slot, k),
// so that the other operations draw as without the feature.
func fairOperation(seed uint64, slot, k int) []CallSpec {
	if k%4 != 3 {
		return nil
	}
	r := rand.New(rand.NewPCG(seed^0xfa1e, uint64(slot)<<32|uint64(k)))
	call := func(i int, tenant string) CallSpec {
		a := Args{Op: fmt.Sprintf("%d-%d-%d", slot, k, i), WorkMS: 2 + r.IntN(300), Text: odd[r.IntN(len(odd))], Blob: make([]byte, 16+r.IntN(64))}
		for j := range a.Blob {
			a.Blob[j] = byte(r.UintN(256))
		}
		if r.IntN(5) == 0 {
			a.Fail = 1
		}
		return CallSpec{Op: a.Op, Task: TaskPlain, Args: a, Via: ViaSubmit, Tenant: tenant}
	}
	switch r.IntN(4) {
	case 0, 1:
		var calls []CallSpec
		for i := range 3 + r.IntN(4) {
			calls = append(calls, call(i, TenantHeavy))
		}
		return calls
	case 2:
		return []CallSpec{call(0, TenantLight)}
	default:
		return []CallSpec{call(0, "")}
	}
}
