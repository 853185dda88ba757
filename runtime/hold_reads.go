package runtime

import (
	"sync/atomic"
	"time"
)

// When the poller reads the scheduled calls to hold (issue #23: the read
// ran at every poll, +1 statement and round trip per poll, with or without
// scheduled calls). A read holds the calls due within scheduledHoldAhead
// (two poll intervals). The on-time promise needs one read every poll
// interval — a call in the database a poll interval before its due time is
// held by then, whichever instance submitted it — and that is what an idle
// instance's poll timer gives. Pokes (a submit, a finished attempt, a retry
// timer, a Register, a new shard split) bring a busy instance many more
// polls; such a poll reads the calls to hold only if the last read may have
// missed one:
//   - holdReadEvery has passed since the last read began;
//   - a submit on this instance wrote a call due within the horizon after
//     it (holdSoon);
//   - the scope differs from the last read's (a Register, a new split);
//   - the last read did not finish (an error, the held retries' bound,
//     holds due and not started), as before.
//
// And since pokes restart the poll timer, the poller wakes for a read once
// a poll interval has passed since the last one began, however often it was
// poked meanwhile.
type holdReads struct {
	stale atomic.Bool // read at the next poll (set by holdSoon, on any goroutine)
	// The poller goroutine's alone:
	last  time.Time    // when the last finished read began; zero: none yet
	scope []claimGroup // the scope it read
}

// holdReadEvery is how old the last read of the calls to hold may be for a
// poll to skip the read: a poll interval, or half the hold horizon if that
// is shorter (RetryHold below two poll intervals), so that a call is held
// at least half the horizon before its due time.
func (rt *Runtime) holdReadEvery() time.Duration {
	return min(rt.cfg.PollInterval, rt.scheduledHoldAhead()/2)
}

// due reports whether a poll at now reads the calls to hold of scope.
func (h *holdReads) due(now time.Time, every time.Duration, scope []claimGroup) bool {
	return h.last.IsZero() || h.stale.Load() || now.Sub(h.last) >= every || !equalGroups(h.scope, scope)
}

// begin is called as a read begins: a submit that marks the reads stale
// from now on is read by the next poll.
func (h *holdReads) begin() { h.stale.Store(false) }

// finished records a read of scope, begun at start, that held every call
// due within the horizon it could.
func (h *holdReads) finished(start time.Time, scope []claimGroup) {
	h.last, h.scope = start, scope
}

// unfinished makes the next poll read again.
func (h *holdReads) unfinished() { h.stale.Store(true) }

// wait returns how long the poller may sleep, at most d, before a read of
// the calls to hold is due: interval after the last read began. With no
// read yet (holding off) or a read due at the next poll anyway, d.
func (h *holdReads) wait(now time.Time, d, interval time.Duration) time.Duration {
	if h.last.IsZero() || h.stale.Load() {
		return d
	}
	return min(d, max(0, h.last.Add(interval).Sub(now)))
}
