package runtime

import "time"

// A submit that runs its call at once writes the row already leased, with
// a lease from when the submit began (now + LeaseDuration). Its INSERT may
// wait long before it lands: on SQLite's write lock held by another
// connection (busy_timeout is 20 s), on a row lock, on lock refusals retried
// with backoff. By the time it is answered the lease written may have
// ended, or be about to: its attempt would start under a lease the rescuer
// may take back, or be canceled before it starts and charged lease_expired
// by the rescuer (the fault checker's charged-unrun, SQLite). So a lease
// that has aged past renewLead (LeaseDuration/2) when the INSERT is
// answered is renewed from then (confirmResolvedLease, fenced on the row
// still being this instance's unstarted first attempt) before the attempt
// starts; if it cannot be renewed the row is left to the database.

// submitLeaseAged reports whether the lease a submit wrote from began (on
// rt.now's clock) has aged past renewLead by now.
func (rt *Runtime) submitLeaseAged(began time.Time) bool {
	return rt.now().Sub(began) > renewLead(rt.cfg.LeaseDuration)
}
