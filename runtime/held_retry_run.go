package runtime

import (
	"context"
	"time"
)

// The runtime's side of held retries (maintenance.HeldRetries holds them,
// starts them at their due time and gives them back at Stop): whether a
// failure may be held, and how a started retry gets its worker.

// canHold reports whether a retry due after delay may be held.
func (rt *Runtime) canHold(delay time.Duration) bool {
	return rt.ctx.Err() == nil && rt.holds.CanHold(delay)
}

// hold queues a retry whose held failure was written. If the runtime is
// stopping, the hold is given back at once instead.
func (rt *Runtime) hold(failed *Task, h *TaskDef, f finishing, due time.Time) {
	rt.holds.Hold(failed, h, f, due)
}

// workerFreed wakes the held retries if one may be waiting for a worker.
func (rt *Runtime) workerFreed() {
	if rt.holds.Held() > 0 {
		rt.holds.Kick()
	}
}

// runWhenFree runs a started retry at its due time on the next free worker
// (it is counted as waiting until then). Its lease is renewed while it
// waits; if the runtime stops first, the attempt is given back unrun. The
// held retries registered it with Stop (register).
func (rt *Runtime) runWhenFree(t *Task, h *TaskDef, due time.Time) {
	lease := leaseKey{ID: t.ID, Attempt: t.ExecuteTimes}
	rt.leases.add(lease)
	go func() {
		defer rt.leases.remove(lease)
		if d := due.Sub(rt.now()); d > 0 {
			timer := time.NewTimer(d)
			select {
			case <-timer.C:
			case <-rt.ctx.Done():
				timer.Stop()
			}
		}
		if rt.ctx.Err() == nil {
			select {
			case rt.slots <- struct{}{}:
				rt.holds.DoneWaiting()
				// A held scheduled call (its first attempt) wakes the
				// poller when done: its worker may take the next hold
				// (scheduled_holds.go).
				_ = rt.run(context.Background(), t, h, false, t.ExecuteTimes == 1)
				return
			case <-rt.ctx.Done():
			}
		}
		rt.holds.DoneWaiting()
		rt.giveBack(t, fence{ID: t.ID, Shard: t.ShardKey, Owner: t.LeaseOwner, Attempt: t.ExecuteTimes, From: StateRunning}, "")
		rt.attempts.Done()
	}()
}
