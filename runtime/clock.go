package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Clock thresholds.
const (
	// maxClockRoundTrip is the longest round trip a clock reading may take
	// to be used: the database's time is known to within half of it.
	maxClockRoundTrip = time.Second
	// skewNotable is the offset from which the skew is worth an INFO line.
	skewNotable = time.Second
	// skewJump is the change between two readings that is logged at WARN
	// (a clock stepped on this host or on the database server).
	skewJump = time.Second
)

// dbClock maps this process's clock (Config.Now) to the database's. Every
// lease and due decision is made on the database's clock, so that instances
// whose clocks disagree still agree on when a lease ends. It is read at
// Start and at every heartbeat (measureClock).
type dbClock struct {
	// last is the last good reading; nil before the first, when now()
	// falls back to the local clock.
	last atomic.Pointer[clockReading]

	mu        sync.Mutex // serialises measurements and guards the fields below
	announced bool       // the INFO line about a notable skew was logged
}

// clockReading pairs the database's time with the local time it was read
// at (the midpoint of the round trip).
type clockReading struct {
	db    time.Time // the database's clock
	local time.Time // Config.Now() at the same instant, monotonic reading included
}

// skew is the database's clock minus this process's at the reading.
func (r *clockReading) skew() time.Duration { return r.db.Sub(r.local) }

// skew is the database's clock minus this process's, as last read (0
// before the first reading).
func (c *dbClock) skew() time.Duration {
	if r := c.last.Load(); r != nil {
		return r.skew()
	}
	return 0
}

// now is the current time on the database's clock: the last reading of it
// plus the time elapsed since on this process's clock. With Config.Now =
// time.Now (the default) that elapsed time is monotonic, so a step of this
// host's wall clock does not move it at all; a step of the database's
// clock is picked up at the next heartbeat.
func (rt *Runtime) now() time.Time {
	local := rt.cfg.Now()
	r := rt.clock.last.Load()
	if r == nil {
		return local
	}
	return r.db.Add(local.Sub(r.local))
}

// measureClock reads the database's clock and makes it the base of now():
// the database's time is taken to be that of the midpoint of the local times
// (Config.Now) before and after the round trip, so it is known to within
// half the round trip. A reading whose round trip took longer than
// maxClockRoundTrip is ignored (the last good one stays). Readings are
// applied as read, without smoothing. It logs at INFO, once, a skew beyond
// skewNotable, and at WARN a skew that moved by more than skewJump since
// the last reading.
func (rt *Runtime) measureClock(ctx context.Context) error {
	c := &rt.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	before := rt.cfg.Now()
	dbTime, err := rt.store.DatabaseTime(ctx)
	after := rt.cfg.Now()
	if err != nil {
		return fmt.Errorf("argo: reading the database's clock: %w", err)
	}
	roundTrip := after.Sub(before)
	if roundTrip < 0 || roundTrip > maxClockRoundTrip {
		rt.log.Debug("argo: database clock reading ignored: round trip too long", "round_trip", roundTrip, "max", maxClockRoundTrip)
		return nil
	}
	reading := &clockReading{db: dbTime, local: before.Add(roundTrip / 2)}
	skew := reading.skew()
	previous := c.last.Swap(reading)
	switch {
	case previous != nil && (skew-previous.skew() > skewJump || previous.skew()-skew > skewJump):
		rt.log.Warn("argo: the offset between this host's clock and the database's changed (a clock was stepped); leases and due times follow the database's clock",
			"instance", rt.cfg.InstanceID, "skew", skew, "previous_skew", previous.skew())
	case !c.announced && (skew > skewNotable || skew < -skewNotable):
		c.announced = true
		rt.log.Info("argo: this host's clock differs from the database's; leases and due times use the database's clock",
			"instance", rt.cfg.InstanceID, "skew", skew, "round_trip", roundTrip)
	}
	return nil
}
