package runtime

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// leaseSet is the leases this instance holds, renewed together by renewLoop
// for as long as anyone holds them: a running attempt or fallback (run), a
// started held retry waiting for a worker (runWhenFree), an outcome still
// being written in the background (record). Each key counts its holders.
//
// A function running under a lease registers its cancel func (start), so
// that a renewal that finds the lease gone cancels it at once (lose); its
// outcome is then not written (done reports the loss).
//
// Each lease has a local deadline (lease_deadline.go): the instant, on this
// process's monotonic clock, at which the last confirmed renewal (or the
// claim) was sent, plus life (LeaseDuration minus leaseStopMargin). When it
// passes with no renewal confirmed since, the lease lapses here: its
// function is canceled as by lose, and no function starts under it.
type leaseSet struct {
	mu   sync.Mutex
	held map[leaseKey]*leaseHold
	// life is how long after a renewal's send the lease is trusted
	// (LeaseDuration - leaseStopMargin); 0 (a leaseSet not set up by
	// setup): leases never expire here.
	life time.Duration
	// expired is told of each lease that expires here, with the function
	// canceled (nil if none ran).
	expired func(k leaseKey, r *leaseRun)
	// added is signalled (without blocking) when a lease is added, so that
	// the renewer renews at once one whose claim took long (nextRenewal).
	added chan struct{}
	// kick is signalled (without blocking, renewNow) when a heartbeat
	// found a task this instance runs cancelled: the renewer renews every
	// lease at once, and the renewal cancels the attempt (cancel.go).
	kick chan struct{}
}

type leaseHold struct {
	holders int
	run     *leaseRun // the function running under this lease, if any
	// deadline: the lease expires here at this instant (time.Now's
	// monotonic clock); timer fires then.
	deadline time.Time
	timer    *time.Timer
	// lapsed: the deadline passed before a renewal was confirmed.
	lapsed bool
	// cancelled: a renewal found the task cancelled (cancel.go); no
	// function starts under it.
	cancelled bool
}

// setup makes leases expire life after their last confirmed renewal was
// sent, telling expired of each.
func (l *leaseSet) setup(life time.Duration, expired func(k leaseKey, r *leaseRun)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.life, l.expired = life, expired
	l.added = make(chan struct{}, 1)
	l.kick = make(chan struct{}, 1)
}

// earliest returns the soonest deadline of the leases held and not lapsed
// (ok false if none).
func (l *leaseSet) earliest() (deadline time.Time, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, h := range l.held {
		if !h.lapsed && !h.deadline.IsZero() && (!ok || h.deadline.Before(deadline)) {
			deadline, ok = h.deadline, true
		}
	}
	return deadline, ok
}

// leaseRun is one function (attempt or fallback) running under a lease.
type leaseRun struct {
	name   string
	kind   string // "attempt" or "fallback"
	cancel context.CancelCauseFunc
	lost   atomic.Bool
}

// add counts a holder of lease k, whose claim (or last renewal) was sent at
// sent (time.Now's clock: Runtime.leaseSentAt; zero for one more holder of
// a lease held already). A lease already held keeps its deadline, which
// renewals have moved since, unless sent gives a later one: then k was
// claimed again (the fallback of the attempt that held it, whose key is
// the same), and the new lease's deadline is taken, lapsed or not before.
func (l *leaseSet) add(k leaseKey, sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held = map[leaseKey]*leaseHold{}
	}
	h := l.held[k]
	if h != nil && h.timer != nil && !sent.IsZero() {
		if d := sent.Add(l.life); d.After(h.deadline) && time.Until(d) > 0 {
			h.deadline, h.lapsed = d, false
			h.timer.Reset(time.Until(d))
		}
	}
	if h == nil {
		h = &leaseHold{}
		l.held[k] = h
		if l.life > 0 {
			h.deadline = sent.Add(l.life)
			h.timer = time.AfterFunc(time.Until(h.deadline), func() { l.lapse(k, h) })
			select {
			case l.added <- struct{}{}:
			default:
			}
		}
	}
	h.holders++
}

func (l *leaseSet) remove(k leaseKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.held[k]; h != nil {
		if h.holders--; h.holders <= 0 {
			delete(l.held, k)
			if h.timer != nil {
				h.timer.Stop()
			}
		}
	}
}

// list returns the leases to renew: every one held, lapsed ones too. A
// lapsed lease stays renewed while anyone holds it (its function, told to
// stop, not returned yet; its outcome being written): if the database
// answers again before the lease is rescued, the next attempt waits for
// that function, and an outcome written before the deadline lands.
func (l *leaseSet) list() []leaseKey {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]leaseKey, 0, len(l.held))
	for k := range l.held {
		out = append(out, k)
	}
	return out
}

// renewed moves the deadlines of keys, whose renewal sent at sent was
// confirmed, to sent + life. A lease that lapsed while a function ran
// under it stays lapsed until that function returns: it was told to stop.
// One that lapsed with no function running under it (a held retry waiting
// for a worker, an outcome being written) is live again: the renewal,
// fenced on owner and attempt, proves it is still this instance's.
func (l *leaseSet) renewed(keys []leaseKey, sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.life <= 0 {
		return
	}
	deadline := sent.Add(l.life)
	if time.Until(deadline) <= 0 {
		return
	}
	for _, k := range keys {
		h := l.held[k]
		if h == nil || (h.lapsed && h.run != nil) || !deadline.After(h.deadline) {
			continue
		}
		h.deadline, h.lapsed = deadline, false
		h.timer.Reset(time.Until(deadline))
	}
}

// lapse expires h (lease k) if its deadline has passed and it is still
// held: the function running under it is canceled with cause ErrLeaseLost
// and its outcome is not written (done reports the loss).
func (l *leaseSet) lapse(k leaseKey, h *leaseHold) {
	l.mu.Lock()
	if l.held[k] != h || h.lapsed {
		l.mu.Unlock()
		return
	}
	if left := time.Until(h.deadline); left > 0 { // renewed as the timer fired
		h.timer.Reset(left)
		l.mu.Unlock()
		return
	}
	h.lapsed = true
	r := h.run
	if r != nil {
		r.lost.Store(true)
		r.cancel(ErrLeaseLost)
	}
	expired := l.expired
	l.mu.Unlock()
	if expired != nil {
		expired(k, r)
	}
}

// lapsedHere reports whether lease k, held, lapsed on this instance's own
// clock (its deadline passed with no renewal confirmed), as opposed to a
// renewal finding it gone.
func (l *leaseSet) lapsedHere(k leaseKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.held[k]
	return h != nil && h.lapsed
}

// start registers a function about to run under k, which the caller holds
// (add), and returns the context to run it with: parent, canceled with cause
// ErrLeaseLost if the lease is found gone or lapses (canceled already if it
// has lapsed, or if its deadline has passed and its timer has not fired
// yet: a lease added with its deadline gone already, whose timer runs on
// another goroutine, lapses here and now, before the function starts). End
// the run with done.
func (l *leaseSet) start(parent context.Context, k leaseKey, name, kind string) (context.Context, *leaseRun) {
	ctx, cancel := context.WithCancelCause(parent)
	r := &leaseRun{name: name, kind: kind, cancel: cancel}
	var lapsedNow bool
	l.mu.Lock()
	if h := l.held[k]; h != nil {
		h.run = r
		if !h.lapsed && h.timer != nil && !time.Now().Before(h.deadline) {
			h.lapsed, lapsedNow = true, true
		}
		if h.lapsed {
			r.lost.Store(true)
			cancel(ErrLeaseLost)
		} else if h.cancelled {
			r.lost.Store(true)
			cancel(ErrCancelled)
		}
	}
	expired := l.expired
	l.mu.Unlock()
	if lapsedNow && expired != nil {
		expired(k, nil) // no function started under it
	}
	return ctx, r
}

// done ends a run registered by start and reports whether its lease was
// lost while it ran (then its outcome must not be written).
func (l *leaseSet) done(k leaseKey, r *leaseRun) (lost bool) {
	l.mu.Lock()
	if h := l.held[k]; h != nil && h.run == r {
		h.run = nil
	}
	l.mu.Unlock()
	r.cancel(nil)
	return r.lost.Load()
}

// lose cancels the function running under k, whose lease a renewal found
// gone, and returns it (nil if none runs: an outcome being written, or a
// held retry not started yet, meets the loss at its own fenced write).
func (l *leaseSet) lose(k leaseKey) *leaseRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.held[k]
	if h == nil || h.run == nil {
		return nil
	}
	h.run.lost.Store(true)
	h.run.cancel(ErrLeaseLost)
	return h.run
}

// running describes the functions running under a lease, for Stop's error:
// "task 12 (send-mail) attempt 3", sorted by task id.
func (l *leaseSet) running() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]leaseKey, 0, len(l.held))
	for k, h := range l.held {
		if h.run != nil {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b leaseKey) int {
		if a.ID != b.ID {
			return cmp.Compare(a.ID, b.ID)
		}
		return a.Attempt - b.Attempt
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		r := l.held[k].run
		out[i] = fmt.Sprintf("task %d (%s) %s %d", k.ID, r.name, r.kind, k.Attempt)
	}
	return out
}

// describeRunning joins running()'s lines, at most ten of them.
func describeRunning(lines []string) string {
	if len(lines) > 10 {
		return strings.Join(lines[:10], ", ") + fmt.Sprintf(" and %d more", len(lines)-10)
	}
	return strings.Join(lines, ", ")
}
