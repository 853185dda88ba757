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
// waits; if the runtime stops first, or if a held scheduled call finds no
// worker within heldWorkerWait of its due time, the attempt is given back
// unrun. The held retries registered it with Stop (register).
func (rt *Runtime) runWhenFree(t *Task, h *TaskDef, due time.Time) {
	lease := leaseKey{ID: t.ID, Shard: t.ShardKey, Attempt: t.ExecuteTimes}
	rt.leases.add(lease, rt.leaseSentAt(t.LeaseUntil))
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
			var giveUp <-chan time.Time
			if t.ExecuteTimes == 1 {
				// A held scheduled call (a first attempt; a held retry is
				// at least the second) that finds no worker for long is
				// given back: it was taken ahead from the shared pool, to
				// which it returns for an idle instance (StealAfter). A
				// held retry waits: it is its instance's.
				timer := time.NewTimer(rt.heldWorkerWait())
				defer timer.Stop()
				giveUp = timer.C
			}
			select {
			case <-giveUp:
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

// heldWorkerWait is how long a started held scheduled call waits for a free
// worker after its due time before it is given back: StealAfter, or
// InstanceTimeout when this instance does not steal.
func (rt *Runtime) heldWorkerWait() time.Duration {
	if rt.cfg.StealAfter > 0 {
		return rt.cfg.StealAfter
	}
	return rt.cfg.InstanceTimeout
}
