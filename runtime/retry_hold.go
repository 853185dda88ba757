package runtime

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Held retries. A failed attempt whose retry falls due within
// Config.RetryHold stays leased by this instance: the failure is written
// with lease_until = due + LeaseDuration, which keeps every claim away, and a
// local timer restarts the task at its due time with one fenced UPDATE per
// task, batched in one transaction (one round trip on MySQL). No claim query
// and no re-read of the row: the retry starts within a millisecond or two of
// its due time, however many fall due together, and a due retry takes a free
// worker before the poller does.
//
// The database stays the safety net. Stop gives the holds back (the rows
// become claimable by anyone at once); after a crash a hold runs out at
// due + LeaseDuration and any instance claims the retry, as it would rescue
// a running attempt. The start is fenced (still retrying, same owner,
// attempt and hold), so a retry an operator discarded, or that another
// instance claimed after the hold ran out, is not run.

// maxHeldRetries bounds the retries one instance holds in memory (each keeps
// its arguments); a failure beyond it goes back to the database as usual.
const maxHeldRetries = 10000

type heldRetry struct {
	t     *Task
	h     *TaskDef
	due   time.Time
	start heldStart
}

// retryHolds is the instance's held retries, earliest due first.
type retryHolds struct {
	mu     sync.Mutex
	queue  heldQueue
	closed bool
	n      atomic.Int64  // len(queue), read without the lock
	kick   chan struct{} // a new hold, or a freed worker
	// waiting counts retries being started or waiting for a worker.
	waiting atomic.Int64
	writers chan struct{} // start transactions in flight (maxStartWriters)
	skipped skippedHolds  // starts refused, logged together (held_skips.go)
}

type heldQueue []*heldRetry

func (q heldQueue) Len() int           { return len(q) }
func (q heldQueue) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q heldQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *heldQueue) Push(x any)        { *q = append(*q, x.(*heldRetry)) }
func (q *heldQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return x
}

// canHold reports whether a retry due after delay may be held.
func (rt *Runtime) canHold(delay time.Duration) bool {
	return rt.cfg.RetryHold > 0 && delay <= rt.cfg.RetryHold && rt.holds.n.Load() < maxHeldRetries && rt.ctx.Err() == nil
}

// hold queues a retry whose held failure was written. If the runtime is
// stopping, the hold is given back at once instead.
func (rt *Runtime) hold(failed *Task, h *TaskDef, f finishing, due time.Time) {
	t := *failed // the failed attempt's caller keeps its own
	t.State, t.ExecuteTime, t.LeaseUntil = StateRetrying, f.Due, f.HoldUntil
	e := &heldRetry{t: &t, h: h, due: due, start: heldStart{ID: t.ID, Shard: t.ShardKey, Attempt: t.ExecuteTimes, HoldUntil: f.HoldUntil}}
	hs := &rt.holds
	hs.mu.Lock()
	if hs.closed {
		hs.mu.Unlock()
		rt.giveBackHolds([]*heldRetry{e})
		return
	}
	heap.Push(&hs.queue, e)
	hs.n.Store(int64(len(hs.queue)))
	hs.mu.Unlock()
	hs.signal()
}

func (hs *retryHolds) signal() {
	select {
	case hs.kick <- struct{}{}:
	default:
	}
}

// workerFreed wakes the hold loop if a held retry may be waiting for a worker.
func (rt *Runtime) workerFreed() {
	if rt.holds.n.Load() > 0 {
		rt.holds.signal()
	}
}

// nextDue returns how long until the earliest hold is due (a long time when
// there is none).
func (hs *retryHolds) nextDue(now time.Time) time.Duration {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if len(hs.queue) == 0 {
		return time.Hour
	}
	return hs.queue[0].due.Sub(now)
}

// takeDue removes up to max holds due at now, earliest first.
func (hs *retryHolds) takeDue(now time.Time, max int) []*heldRetry {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	var out []*heldRetry
	for len(out) < max && len(hs.queue) > 0 && !hs.queue[0].due.After(now) {
		out = append(out, heap.Pop(&hs.queue).(*heldRetry))
	}
	hs.n.Store(int64(len(hs.queue)))
	return out
}

// anyDue reports whether a hold is due at now.
func (hs *retryHolds) anyDue(now time.Time) bool {
	if hs.n.Load() == 0 {
		return false
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return len(hs.queue) > 0 && !hs.queue[0].due.After(now)
}

// requeue puts holds whose start could not be written back in the queue,
// due again at retryAt, except those whose hold has run out by then.
func (hs *retryHolds) requeue(es []*heldRetry, retryAt time.Time) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.closed {
		return
	}
	for _, e := range es {
		if toMillis(retryAt) < e.start.HoldUntil {
			e.due = retryAt
			heap.Push(&hs.queue, e)
		}
	}
	hs.n.Store(int64(len(hs.queue)))
}

// close empties the queue for good and returns what it held.
func (hs *retryHolds) close() []*heldRetry {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.closed = true
	out := []*heldRetry(hs.queue)
	hs.queue = nil
	hs.n.Store(0)
	return out
}

// holdLoop starts held retries as they fall due, while workers are free.
func (rt *Runtime) holdLoop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := rt.holds.nextDue(rt.now()) - heldStartLead
		if wait <= 0 {
			// Due but not startable now (no room, or every writer busy):
			// whatever frees room kicks the loop; the timer is a backstop.
			wait = 50 * time.Millisecond
		}
		timer.Reset(wait)
		select {
		case <-rt.ctx.Done():
			rt.giveBackHolds(rt.holds.close())
			return
		case <-timer.C:
		case <-rt.holds.kick:
		}
		rt.startDueHolds()
	}
}

// startDueHolds starts the holds due within heldStartLead, a batch per
// transaction, with up to maxStartWriters transactions in flight (their
// commits share log flushes). A started retry waits for its due time, then
// takes the next free worker: the start write holds none, so workers run
// attempts while later batches are written. At most max(ClaimBatch,
// 2×Workers) retries are being started or waiting at a time.
func (rt *Runtime) startDueHolds() {
	for rt.ctx.Err() == nil {
		now := rt.now()
		room := max(rt.cfg.ClaimBatch, 2*rt.cfg.Workers) - int(rt.holds.waiting.Load())
		if room <= 0 || !rt.holds.anyDue(now.Add(heldStartLead)) {
			return // a retry that takes a worker kicks the loop again
		}
		select {
		case rt.holds.writers <- struct{}{}:
		default:
			return // every writer busy; the first to finish kicks the loop
		}
		k := rt.register(room)
		batch := rt.holds.takeDue(now.Add(heldStartLead), k)
		rt.unregister(k - len(batch))
		if len(batch) == 0 {
			<-rt.holds.writers
			return
		}
		rt.holds.waiting.Add(int64(len(batch)))
		go rt.startHeldBatch(batch, now)
	}
}

// heldStartLead is how early the start of a held retry is written: the
// attempt itself waits for its due time, so a slow commit (a log flush
// stall) does not make it late.
const heldStartLead = 20 * time.Millisecond

// maxStartWriters bounds the start transactions of held retries in flight.
const maxStartWriters = 2

// startHeldBatch writes the start of a batch of holds and runs those still
// this instance's; the caller registered each with Stop and counted it as
// waiting.
func (rt *Runtime) startHeldBatch(batch []*heldRetry, now time.Time) {
	defer rt.holds.signal()
	starts := make([]heldStart, len(batch))
	for i, e := range batch {
		starts[i] = e.start
	}
	leaseUntil := toMillis(now.Add(rt.cfg.LeaseDuration))
	// Not rt.ctx: a start write under way when Stop begins lands, and the
	// started retries are then given back unrun (runWhenFree).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	started, err := rt.store.StartHeld(ctx, rt.cfg.InstanceID, starts, leaseUntil, toMillis(now))
	if err != nil && !rt.store.OutcomeKnown(err) {
		// The start may have landed (its rows now running, leased by this
		// instance): find out per row before acting (internal/storage/resolve.go).
		started, err = rt.store.ResolveHeldStart(ctx, rt.cfg.InstanceID, starts, leaseUntil, toMillis(now))
	}
	cancel()
	<-rt.holds.writers
	if err != nil {
		rt.holds.waiting.Add(-int64(len(batch)))
		rt.unregister(len(batch))
		rt.health.failed(rt, "start held retries", err)
		// Try again shortly; a hold that ran out meanwhile is left to the
		// database, where any instance claims it.
		rt.holds.requeue(batch, rt.now().Add(200*time.Millisecond))
		return
	}
	rt.health.ok(rt)
	var skipped []*heldRetry
	for i, e := range batch {
		if !started[i] {
			rt.holds.waiting.Add(-1)
			skipped = append(skipped, e)
			continue
		}
		t := e.t
		t.ExecuteTimes++
		t.State, t.LeaseOwner, t.LeaseUntil, t.GmtModified = StateRunning, rt.cfg.InstanceID, leaseUntil, toMillis(now)
		rt.runWhenFree(t, e.h, e.due)
	}
	// Noted before they end their registration, so Stop logs them.
	rt.noteSkippedHolds(skipped)
	rt.unregister(len(skipped))
}

// runWhenFree runs a started retry at its due time on the next free worker
// (it is counted as waiting until then). Its lease is renewed while it
// waits; if the runtime stops first, the attempt is given back unrun.
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
				rt.holds.waiting.Add(-1)
				rt.holds.signal()
				_ = rt.run(context.Background(), t, h, false, false)
				return
			case <-rt.ctx.Done():
			}
		}
		rt.holds.waiting.Add(-1)
		rt.giveBack(t, fence{ID: t.ID, Shard: t.ShardKey, Owner: t.LeaseOwner, Attempt: t.ExecuteTimes, From: StateRunning}, "")
		rt.attempts.Done()
	}()
}

// giveBackHolds releases holds so that any instance may claim the retries
// when due (Stop, or a hold that came too late to queue).
func (rt *Runtime) giveBackHolds(es []*heldRetry) {
	if len(es) == 0 {
		return
	}
	ids := make([]int64, len(es))
	for i, e := range es {
		ids[i] = e.t.ID
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for len(ids) > 0 {
		n := min(len(ids), 500)
		if err := rt.store.ReleaseHolds(ctx, rt.cfg.InstanceID, ids[:n]); err != nil {
			rt.log.Warn("argo: held retries not given back; they are claimable once their hold runs out", "tasks", len(ids), "error", err)
			return
		}
		ids = ids[n:]
	}
}
