package runtime

import (
	"sync"
	"time"
)

// health tracks whether the database answers, so that an outage is logged
// once when it starts and once when it ends, never once per poll, and the
// poller backs off meanwhile.
type health struct {
	mu      sync.Mutex
	down    bool
	since   time.Time
	backoff time.Duration
}

func (h *health) failed(rt *Runtime, op string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down {
		h.down, h.since = true, time.Now()
		h.backoff = rt.cfg.PollInterval
		rt.log.Error("argo: database unreachable; tasks keep their rows, polling backs off until it answers", "op", op, "error", err)
		return
	}
	if h.backoff < 30*time.Second {
		h.backoff *= 2
	}
}

func (h *health) ok(rt *Runtime) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down {
		h.down = false
		rt.log.Info("argo: database reachable again", "outage", time.Since(h.since).Round(time.Millisecond))
	}
}

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
