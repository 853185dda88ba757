package runtime

import (
	"sync"
	"time"
)

// health tracks whether the database answers (every statement of the
// runtime and of its maintenance services reports to it), so that an outage is logged
// once when it starts and once when it ends, never once per poll, and the
// poller backs off meanwhile. The heartbeat, which keeps its own interval
// through an outage, is the probe: when it gets through, the poller is woken
// at once rather than at the end of its backoff, and its claim ends the
// outage.
type health struct {
	mu        sync.Mutex
	down      bool
	since     time.Time
	announced bool      // this outage was logged (it lasted announceAfter, or followed one closely)
	upAt      time.Time // when the last outage long enough to lapse leases ended (zero: none)
	lastUp    time.Time // when the last announced outage ended
	backoff   time.Duration
}

// announceAfter is how long failures must last before they are logged as an
// outage: a single broken connection, retried at once, is no outage.
const announceAfter = time.Second

func (h *health) failed(rt *Runtime, op string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down {
		h.down, h.since, h.announced = true, time.Now(), false
		h.backoff = rt.cfg.PollInterval
		if !h.lastUp.IsZero() && time.Since(h.lastUp) < flapWindow {
			// A server going down (or coming up) often answers a few
			// statements in between: one outage, not several.
			h.announced = true
			rt.log.Warn("argo: database unreachable again right after it answered", "op", op, "error", err)
			return
		}
	} else if h.backoff < 30*time.Second {
		h.backoff *= 2
	}
	if !h.announced && time.Since(h.since) >= announceAfter {
		h.announced = true
		rt.log.Error("argo: database unreachable; tasks keep their rows, polling backs off until it answers", "op", op, "error", err, "since", h.since.UTC().Format(time.RFC3339Nano))
	}
}

func (h *health) ok(rt *Runtime) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down {
		h.down = false
		outage := time.Since(h.since)
		if outage >= rt.cfg.LeaseDuration/3 { // renewals were missed: leases may look expired
			h.upAt = time.Now()
		}
		if h.announced {
			h.lastUp = time.Now()
			rt.log.Info("argo: database reachable again", "outage", outage.Round(time.Millisecond))
		} else {
			rt.log.Debug("argo: transient database error passed", "outage", outage.Round(time.Millisecond))
		}
		rt.poke() // the poller may be in a long backoff sleep
	}
}

// probed is called when the heartbeat got through. If the database was
// down, the poller is woken to claim at once: its success ends the outage.
func (h *health) probed(rt *Runtime) {
	h.mu.Lock()
	down := h.down
	h.mu.Unlock()
	if down {
		rt.poke()
	}
}

// upSince reports whether the database answers, and when the last outage
// long enough to lapse leases ended (zero: none). The rescuer waits a
// LeaseDuration after it before rescuing (maintenance.Rescuer.Settled):
// until then every instance's leases may look expired only because nobody
// could renew them.
func (h *health) upSince() (up bool, since time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.down, h.upAt
}

// flapWindow is how soon after a recovery a new failure counts as the same
// outage (logged as a warning, not as a new error).
const flapWindow = 5 * time.Second

// pollDelay is the wait before the next poll: the poll interval, or the
// outage backoff while the database is down.
func (h *health) pollDelay(base time.Duration) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down && h.backoff > base {
		return h.backoff
	}
	return base
}
