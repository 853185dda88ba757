package runtime

import (
	"context"
	"time"
)

// Held scheduled calls: a scheduled call (Scheduled mode or Call.RunAt)
// about to fall due is held by the instance that owns its shard and
// started from the held retries' local timer at its due time, instead of
// waiting for the next poll (up to PollInterval late). The poller holds
// those due within scheduledHoldAhead (storage's
// HoldScheduled: leased until due + LeaseDuration, so no other instance
// claims it meanwhile); maintenance.HeldRetries starts them with one
// fenced UPDATE each and runWhenFree runs them at their due time. The
// read of the calls to hold runs at least every poll interval, not at
// every poll (hold_reads.go). Stop
// gives them back (any instance claims them when due); after a crash the
// hold runs out at due + LeaseDuration and any instance claims them.

// scheduledHoldPolls is how many poll intervals ahead the poller holds
// scheduled calls: more than one, so that a call falling due before the
// next poll is always held by this one.
const scheduledHoldPolls = 2

// scheduledHoldTimeout bounds one hold of scheduled calls.
const scheduledHoldTimeout = 10 * time.Second

// scheduledHoldAhead is how far ahead scheduled calls are held:
// scheduledHoldPolls × PollInterval, at most RetryHold (negative when
// holding is disabled: nothing is held). A call scheduled further ahead is
// not held early: a later poll holds it, or a claim takes it when due.
func (rt *Runtime) scheduledHoldAhead() time.Duration {
	return min(rt.cfg.RetryHold, scheduledHoldPolls*rt.cfg.PollInterval)
}

// holdScheduled holds the scheduled calls of this instance's shards (and
// names) due within scheduledHoldAhead, a ClaimBatch at a time, while the
// held retries have room (their MaxHeld bound), if a read is due
// (hold_reads.go: at least every poll interval, and after a local submit
// of a call due soon or a change of scope). A held call that finds no free
// worker for heldWorkerWait after its due time is given back
// (runWhenFree), so that a busy instance does not keep its shards' calls
// from idle ones (StealAfter).
func (rt *Runtime) holdScheduled() {
	ahead := rt.scheduledHoldAhead()
	if ahead <= 0 {
		return
	}
	// Tasks under flow control start only through their group's gated
	// claim (flow_control.go): never held.
	names, _ := rt.splitFlow(rt.handlerNames())
	scope := rt.claimScope(names)
	start := rt.now()
	if !rt.holdReads.due(start, rt.holdReadEvery(), scope) {
		return
	}
	rt.holdReads.begin()
	for rt.ctx.Err() == nil {
		now := rt.now()
		if rt.holds.AnyDue(now) {
			// Holds due and not started: the start path is behind (busy,
			// or its writes hang in an outage). Queued holds keep workers
			// from the poller; more would keep more. Leave the calls to
			// the claim until it catches up.
			rt.holdReads.unfinished()
			return
		}
		limit := min(rt.cfg.ClaimBatch, rt.holds.Room())
		if limit <= 0 {
			rt.holdReads.unfinished()
			return
		}
		if len(names) == 0 {
			rt.holdReads.finished(start, scope) // nothing to hold
			return
		}
		// Not canceled by Stop: a hold written as Stop begins is queued
		// and so given back, rather than left to run out.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(rt.ctx), scheduledHoldTimeout)
		held, err := rt.store.HoldScheduled(ctx, rt.cfg.InstanceID, toMillis(now), toMillis(now.Add(ahead)),
			Millis(rt.cfg.LeaseDuration.Milliseconds()), limit, scope)
		cancel()
		if err != nil {
			rt.holdReads.unfinished()
			if rt.ctx.Err() == nil {
				rt.health.failed(rt, "hold scheduled calls", err)
			}
			return
		}
		for _, t := range held {
			rt.holds.HoldScheduled(t, rt.handler(t.Name), t.ExecuteTime.Time())
		}
		if len(held) < limit {
			rt.holdReads.finished(start, scope)
			return
		}
	}
}

// holdSoon wakes the poller at once if a call just submitted falls due
// within scheduledHoldAhead, so that it is held (and started on time)
// rather than claimed when due: if it is not due yet, that poll reads the
// calls to hold (hold_reads.go); a call due already is the claim's.
func (rt *Runtime) holdSoon(due time.Time) {
	if ahead := rt.scheduledHoldAhead(); ahead > 0 {
		if until := due.Sub(rt.now()); until <= ahead {
			if until > 0 {
				rt.holdReads.stale.Store(true)
			}
			rt.poke()
		}
	}
}
