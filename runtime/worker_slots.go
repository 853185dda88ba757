package runtime

import "time"

// reserve takes up to n worker slots and registers that many attempts with
// Stop, unless the runtime is stopping; it returns how many it took. Each
// reservation ends in runAttempt, or is given back with unreserve.
func (rt *Runtime) reserve(n int) int {
	rt.stopMu.Lock()
	defer rt.stopMu.Unlock()
	if rt.stopping {
		return 0
	}
	got := 0
	for got < n && rt.tryAcquire() {
		got++
	}
	rt.attempts.Add(got)
	return got
}

// unreserve gives back k reservations that did not become attempts.
func (rt *Runtime) unreserve(k int) {
	for range k {
		rt.release()
		rt.attempts.Done()
	}
}

// register registers n attempts with Stop without taking worker slots
// (started held retries take theirs when one is free), unless the runtime is
// stopping; it returns how many it registered.
func (rt *Runtime) register(n int) int {
	rt.stopMu.Lock()
	defer rt.stopMu.Unlock()
	if rt.stopping {
		return 0
	}
	rt.attempts.Add(n)
	return n
}

// unregister ends k registrations that did not become attempts.
func (rt *Runtime) unregister(k int) {
	for range k {
		rt.attempts.Done()
	}
}

// reserveSync registers an attempt that runs in the caller's goroutine (it
// takes no worker slot), unless the runtime is stopping.
func (rt *Runtime) reserveSync() bool {
	rt.stopMu.Lock()
	defer rt.stopMu.Unlock()
	if rt.stopping {
		return false
	}
	rt.attempts.Add(1)
	return true
}

func (rt *Runtime) tryAcquire() bool {
	select {
	case rt.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (rt *Runtime) release() {
	<-rt.slots
	rt.workerFreed()
}

// poke wakes the poller without blocking.
func (rt *Runtime) poke() {
	select {
	case rt.wake <- struct{}{}:
	default:
	}
}

// scheduleWake sets a local timer to poke the poller when a task falls due
// before the next poll, so a retry starts on time rather than up to a poll
// interval late. The poll remains the safety net.
func (rt *Runtime) scheduleWake(due time.Time) {
	d := due.Sub(rt.now()) // due is on the database's clock
	if d <= 0 {
		rt.poke()
		return
	}
	if d < rt.cfg.PollInterval {
		time.AfterFunc(d, rt.poke)
	}
}
