package runtime

import (
	"time"
)

// startLoops starts the poller, which ends when rt.ctx is canceled, and
// the lease renewer, which Stop ends once nothing holds a lease any more
// (renewStop). The other background work is services.go's.
func (rt *Runtime) startLoops() {
	rt.loops.Add(1)
	go func() {
		defer rt.loops.Done()
		defer close(rt.pollDone)
		defer rt.giveBackClaimsOnStop() // claim_unknown.go
		rt.pollLoop()
	}()
	go func() {
		defer close(rt.renewDone)
		rt.renewLoop()
	}()
}

// sleep waits d or until the runtime stops; it reports whether to go on.
func (rt *Runtime) sleep(d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-rt.ctx.Done():
		return false
	case <-t.C:
	case <-wake:
	}
	return true
}

// pollLoop claims due tasks of this instance's shards while there are free
// workers, and holds its scheduled calls about to fall due, every
// PollInterval or when poked (a submit, a retry timer, a finished attempt).
// The scheduled calls to hold are read at least every PollInterval, not at
// every poll (hold_reads.go): pokes restart the timer, so the wait ends
// when that read is due.
func (rt *Runtime) pollLoop() {
	for {
		rt.claimAvailable()
		rt.holdScheduled() // scheduled_holds.go
		d := rt.health.pollDelay(rt.cfg.PollInterval)
		if d == rt.cfg.PollInterval { // not the outage backoff
			d = rt.holdReads.wait(rt.now(), d, rt.cfg.PollInterval)
		}
		if !rt.sleep(d, rt.wake) {
			return
		}
	}
}

func (rt *Runtime) claimAvailable() {
	rt.giveBackClaims(rt.ctx) // rows of a claim whose COMMIT's answer was lost (claim_unknown.go)
	for rt.ctx.Err() == nil {
		batch := rt.cfg.ClaimBatch
		if now := rt.now(); rt.holds.AnyDue(now) {
			// Due held retries take free workers first (the service); the
			// poller claims only with the workers they leave. It does not
			// stand aside altogether: a hold loop whose start writes fail
			// or hang (an outage) would stop every claim meanwhile.
			rt.holds.Kick()
			batch = min(batch, rt.workersLeftByHolds(now))
		}
		n := rt.reserve(batch)
		if n == 0 {
			return
		}
		now := rt.now()
		names, groups := rt.splitFlow(rt.handlerNames())
		names, groups = rt.claimGranted(names, groups, now)
		tasks, err := rt.claimOwn(now, n, names) // instance_scope.go: by Config.TaskPriority
		if err == nil && len(tasks) < n && rt.cfg.StealAfter > 0 && rt.othersOwnShards(names) {
			// Spare workers: take tasks left overdue in other instances'
			// shards (a crashed owner not yet timed out, a busy one). A
			// failure here must not lose the tasks claimed above.
			stolen, serr := rt.store.ClaimScoped(rt.ctx, rt.cfg.InstanceID, toMillis(now), toMillis(now.Add(-rt.cfg.StealAfter)), toMillis(now.Add(rt.cfg.LeaseDuration)), n-len(tasks), []claimGroup{{Names: names, Tenants: rt.cfg.Tenants}})
			if serr != nil && rt.ctx.Err() == nil {
				rt.health.failed(rt, "claim", serr)
			}
			tasks = append(tasks, stolen...)
		}
		// Start what was claimed before the gated claims: a gated claim
		// can wait for its group's lock (claim_flow_wait.go), and the tasks
		// taken above must not wait with it while their leases run out.
		started := rt.startClaimed(tasks)
		flowFailed := false
		if err == nil && started < n && len(groups) > 0 {
			// Tasks under flow control: each group's gated claim, each
			// group's tasks started as soon as they are taken.
			// A failure here must not lose the tasks claimed above.
			gated, ferr := rt.claimFlow(groups, n-started, now)
			flowFailed = ferr != nil
			if ferr != nil && rt.ctx.Err() == nil {
				rt.health.failed(rt, "claim", ferr)
				rt.observe(func(o Observer) { o.ClaimError(ferr) })
			}
			started += gated
		}
		rt.unreserve(n - started)
		if err != nil {
			if rt.ctx.Err() == nil {
				rt.health.failed(rt, "claim", err)
				rt.observe(func(o Observer) { o.ClaimError(err) })
			}
			return
		}
		if !flowFailed {
			rt.health.ok(rt)
		}
		if started < n {
			return
		}
	}
}
