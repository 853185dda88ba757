package runtime

import (
	"context"
	"time"
)

// renewLoop extends the leases this instance holds every LeaseDuration/3,
// and at once when a heartbeat finds a task it runs cancelled (renewNow),
// for as long as anyone holds them: it goes on after Stop begins, while
// attempts still run, and ends when Stop closes renewStop. A renewal that
// fails (or gets no answer within renewTimeout) is tried again after
// renewRetry, until one is confirmed or the leases lapse here
// (lease_deadline.go); a lease whose deadline is nearer than renewLead
// (a claim that took long) is renewed without waiting for the period.
func (rt *Runtime) renewLoop() {
	timer := time.NewTimer(rt.cfg.LeaseDuration / 3)
	defer timer.Stop()
	last, ok := time.Now(), true
	for {
		select {
		case <-rt.renewStop:
			return
		case <-rt.leases.added:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			timer.Reset(rt.nextRenewal(last, ok))
			continue
		case <-rt.leases.kick:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		case <-timer.C:
		}
		last = time.Now()
		ok = rt.renewLeases()
		timer.Reset(rt.nextRenewal(last, ok))
	}
}

// renewNow makes the renewer renew every lease at once (a heartbeat found
// that a task this instance runs was cancelled: maintenance.Heartbeater's
// CancelSeen); a renewal already asked for and not begun covers it.
func (rt *Runtime) renewNow() {
	select {
	case rt.leases.kick <- struct{}{}:
	default:
	}
}

// nextRenewal is how long to wait before the next renewal, the last one
// having begun at last and succeeded or not (ok): LeaseDuration/3 after it
// (renewRetry after a failure), or sooner if a lease's deadline is nearer
// than renewLead, but never less than renewRetry after it.
func (rt *Runtime) nextRenewal(last time.Time, ok bool) time.Duration {
	lease := rt.cfg.LeaseDuration
	at := last.Add(lease / 3)
	if !ok {
		at = last.Add(renewRetry(lease))
	}
	if d, held := rt.leases.earliest(); held && d.Add(-renewLead(lease)).Before(at) {
		at = d.Add(-renewLead(lease))
	}
	if floor := last.Add(renewRetry(lease)); at.Before(floor) {
		at = floor
	}
	return max(time.Until(at), 0)
}

// renewLeases extends every lease held and cancels the functions whose
// lease a renewal finds gone (rescued, or taken by another instance): their
// outcome is not written. It reports false if the renewal failed (the
// database did not answer within renewTimeout): the leases keep their
// deadlines here, and lapse at them unless a renewal is confirmed first.
func (rt *Runtime) renewLeases() bool {
	keys := rt.leases.list()
	if len(keys) == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), renewTimeout(rt.cfg.LeaseDuration))
	defer cancel()
	// Taken before the lease's end is computed: the lease written ends no
	// earlier than LeaseDuration after this instant.
	sent := time.Now()
	now := rt.now()
	// The attempts' latest progress rides on the renewal (progress.go).
	prog, carry := rt.progress.due(keys, sent)
	lost, cancelled, err := rt.store.RenewLeases(ctx, rt.cfg.InstanceID, keys, prog, toMillis(now.Add(rt.cfg.LeaseDuration)), toMillis(now))
	if err != nil {
		rt.health.failed(rt, "renew leases", err)
		return false
	}
	gone := make(map[leaseKey]bool, len(lost))
	for _, k := range cancelled {
		gone[k] = true
		rt.leaseCancelled(k) // cancel.go
	}
	for _, k := range lost {
		if gone[k] {
			continue
		}
		gone[k] = true
		if r := rt.leases.lose(k); r != nil {
			rt.log.Warn("argo: lease lost (the task was rescued or taken by another instance): "+r.kind+" canceled, its outcome will not be recorded", "task_id", k.ID, "task", r.name, "attempt", k.Attempt)
		}
	}
	rt.progress.written(carry, prog, gone, sent)
	renewed := keys[:0]
	for _, k := range keys {
		if !gone[k] {
			renewed = append(renewed, k)
		}
	}
	rt.leases.renewed(renewed, sent)
	return true
}

// leaseLapsed logs a lease whose renewal could not be confirmed before its
// deadline here: its function (r, nil if none ran) was canceled with cause
// ErrLeaseLost, and its outcome will not be written.
func (rt *Runtime) leaseLapsed(k leaseKey, r *leaseRun) {
	if r == nil {
		rt.log.Warn("argo: lease not renewed before it ends (the database did not answer): no function will start under it", "task_id", k.ID, "attempt", k.Attempt)
		return
	}
	rt.log.Warn("argo: lease not renewed before it ends (the database did not answer): "+r.kind+" canceled, its outcome will not be recorded; the task is left to the rescuer", "task_id", k.ID, "task", r.name, "attempt", k.Attempt)
}
