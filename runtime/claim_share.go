package runtime

import "time"

// workersLeftByHolds returns how many free workers the poller may claim with
// while held retries are due at now: the free workers less the held retries
// started and waiting for one, and less those due but not yet started (zero
// or less: none).
func (rt *Runtime) workersLeftByHolds(now time.Time) int {
	free := cap(rt.slots) - len(rt.slots) - int(rt.holds.waiting.Load())
	if free <= 0 {
		return 0
	}
	return free - rt.holds.countDue(now, free)
}

// countDue counts the holds due at now, up to limit.
func (hs *retryHolds) countDue(now time.Time, limit int) int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	n := 0
	for _, e := range hs.queue { // a heap: due ones are anywhere
		if n >= limit {
			break
		}
		if !e.due.After(now) {
			n++
		}
	}
	return n
}
