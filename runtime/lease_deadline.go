package runtime

import "time"

// An instance cut off from the database cannot renew its leases, and
// another instance rescues them once they end: the cut-off instance must
// have told its functions to stop by then. It keeps, per lease, a local
// deadline on its own monotonic clock (time.Now, never the database's
// clock): the instant its last confirmed renewal (or the claim) was sent,
// plus LeaseDuration, minus leaseStopMargin. The lease written then ends at
// the database's time of that send plus LeaseDuration, so the deadline
// falls a margin before it whatever the round trip took. When the deadline
// passes without a renewal confirmed since, the function running under the
// lease is canceled with cause ErrLeaseLost and its outcome is not written,
// and a held retry not yet started under it does not start (the lease is
// still renewed until its holders let go: leaseSet.list). The rescuer, for its part, waits maintenance's grace
// (rescueGrace) after a lease ends before taking it back.

// Lease margins, as fractions of LeaseDuration.
const (
	// leaseStopDivisor: an instance cancels the functions running under a
	// lease it could not renew LeaseDuration/leaseStopDivisor (200 ms of
	// a 2 s lease, 3 s of the default 30 s) before the lease ends by its
	// own clock.
	leaseStopDivisor = 10
	// rescueGraceDivisor: the rescuer takes a lease back only
	// LeaseDuration/rescueGraceDivisor after it ended on the database's
	// clock. With the stop margin, the cut-off instance's functions are
	// told to stop at least LeaseDuration/5 before the next attempt can
	// start: room for both instances' clock-offset errors (half a clock
	// reading's round trip each) and a late timer. The grace must be at
	// least the stop margin (TestRescueGraceCoversLeaseStopMargin).
	rescueGraceDivisor = 10
	// renewTimeoutDivisor: one renewal that gets no answer is abandoned
	// after LeaseDuration/renewTimeoutDivisor, a renewal period (a hung
	// connection, a network that swallows packets), and retried.
	renewTimeoutDivisor = 3
	// renewLeadDivisor: a lease with less than
	// LeaseDuration/renewLeadDivisor left before its deadline here (its
	// claim took long, under load) is renewed at once, not at the next
	// period.
	renewLeadDivisor = 2
	// renewRetryDivisor: a failed renewal is retried after
	// LeaseDuration/renewRetryDivisor, not at the next LeaseDuration/3
	// tick, so that a short blip does not cost the leases.
	renewRetryDivisor = 20
)

// leaseStopMargin is how long before its lease ends (by this instance's
// clock) a function whose lease could not be renewed is canceled.
func leaseStopMargin(lease time.Duration) time.Duration { return lease / leaseStopDivisor }

// rescueGrace is how long after a lease ended (on the database's clock) the
// rescuer waits before taking it back (maintenance.RescuerConfig.Grace).
func rescueGrace(lease time.Duration) time.Duration { return lease / rescueGraceDivisor }

// renewTimeout bounds one renewal's round trip.
func renewTimeout(lease time.Duration) time.Duration { return lease / renewTimeoutDivisor }

// renewLead is how near its deadline a lease is renewed without waiting
// for the period.
func renewLead(lease time.Duration) time.Duration { return lease / renewLeadDivisor }

// renewRetry is the pause before a failed renewal is tried again.
func renewRetry(lease time.Duration) time.Duration {
	return max(lease/renewRetryDivisor, 10*time.Millisecond)
}

// leaseSentAt is the instant, on this process's monotonic clock, at which
// a lease ending at until (on the database's clock, as this instance wrote
// it: the database's time of the write's send plus LeaseDuration) was
// sent: until - LeaseDuration, mapped back through the current clock
// reading. It is never later than now. It is exact while the reading the
// claim used is the current one; a reading taken since (every heartbeat)
// shifts it by the change of the offset, normally a millisecond or less
// (a step of the database's clock shifts it by the step). Renewals carry
// their own send instant and need no mapping.
func (rt *Runtime) leaseSentAt(until Millis) time.Time {
	local := time.Now()
	sent := local.Add(until.Time().Sub(rt.now()) - rt.cfg.LeaseDuration)
	if sent.After(local) {
		return local
	}
	return sent
}
