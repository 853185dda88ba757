package runtime

import (
	"context"
	"errors"
	"time"
)

// A gated claim (storage.ClaimFlow) locks its group's row in argo_flow. A
// session that holds that lock and never ends (a client that vanished
// mid-transaction, its server session left open; a long transaction of an
// operator) made every gated claim of the group wait the server's lock
// wait timeout (InnoDB: 50 s), and the poller, which claims one step after
// another, waited with it: it claimed nothing else meanwhile, and the
// tasks it had just taken waited unstarted while their leases ran out (the
// rescuer then charged each a lease_expired attempt that never ran). Two
// guards: the poller starts each step's tasks as soon as they are taken
// (poller.go, claimFlow), and a gated claim waits at most flowClaimWait;
// then its group is skipped for as long (the other groups and the plain
// claims go on) and tried again, without counting as an outage of the
// database. A claim cut off by the bound mid-COMMIT is an unknown claim:
// its rows are given back (claim_unknown.go).

// flowClaimWait bounds one gated claim: half the lease (the tasks it takes
// are leased from its start), at least 250 ms.
var flowClaimWait = func(lease time.Duration) time.Duration { return max(lease/2, 250*time.Millisecond) }

// startClaimed starts the claimed tasks, each on a worker the caller
// reserved, and returns how many it started.
func (rt *Runtime) startClaimed(tasks []*Task) int {
	for _, t := range tasks {
		rt.goAttempt(t, rt.handler(t.Name), true)
	}
	return len(tasks)
}

// flowClaimWaited reports whether err is a gated claim cut off by its own
// bound (ctx), the runtime still running.
func (rt *Runtime) flowClaimWaited(ctx context.Context, err error) bool {
	return err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && rt.ctx.Err() == nil
}
