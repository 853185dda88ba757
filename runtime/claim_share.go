package runtime

import "time"

// workersLeftByHolds returns how many free workers the poller may claim with
// while held retries are due at now: the free workers less the held retries
// started and waiting for one, and less those due but not yet started (zero
// or less: none).
func (rt *Runtime) workersLeftByHolds(now time.Time) int {
	free := cap(rt.slots) - len(rt.slots) - rt.holds.Waiting()
	if free <= 0 {
		return 0
	}
	return free - rt.holds.CountDue(now, free)
}
