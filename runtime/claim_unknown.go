package runtime

import (
	"context"
	"time"
)

// Claims whose COMMIT's answer was lost (internal/storage/claim_unknown.go):
// the Store remembers the rows such a claim may have taken; the poller
// gives them back, attempt undone, before each claim and once more when it
// stops, so that an attempt that never started is not charged. If this
// instance dies first, their leases run out and the rescuer charges a
// lease_expired attempt (docs/semantics.md, "A lost COMMIT answer").

// giveBackClaimsAtStop bounds the poller's last give-back at Stop.
const giveBackClaimsAtStop = 5 * time.Second

// giveBackClaims gives back the rows of claims whose outcome was unknown,
// if any; the rows it cannot reach now are kept for the next try.
func (rt *Runtime) giveBackClaims(ctx context.Context) {
	if rt.store.PendingClaims() == 0 {
		return
	}
	gave, err := rt.store.GiveBackPendingClaims(ctx, toMillis(rt.now()))
	if gave > 0 {
		rt.log.Info("argo: rows taken by a claim whose COMMIT's answer was lost given back, their attempt undone", "rows", gave)
	}
	if err != nil {
		rt.log.Warn("argo: rows a claim may have taken (its COMMIT's answer was lost) not given back yet", "rows", rt.store.PendingClaims(), "error", err)
	}
}

// giveBackClaimsOnStop is the poller's last give-back, after Stop canceled
// the runtime's context (which may itself have cut a claim mid-commit): on
// a context of its own, bounded by giveBackClaimsAtStop.
func (rt *Runtime) giveBackClaimsOnStop() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rt.ctx), giveBackClaimsAtStop)
	defer cancel()
	for rt.store.PendingClaims() > 0 && ctx.Err() == nil {
		rt.giveBackClaims(ctx)
		if rt.store.PendingClaims() > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	if n := rt.store.PendingClaims(); n > 0 {
		rt.log.Warn("argo: Stop: rows a claim may have taken (its COMMIT's answer was lost) could not be given back; their leases run out and each is charged a lease_expired attempt", "rows", n)
	}
}
