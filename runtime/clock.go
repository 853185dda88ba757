package runtime

import (
	"sync/atomic"
	"time"
)

// dbClock is the offset from this process's clock (Config.Now) to the
// database's. Every lease and due decision is made on the database's clock,
// so that instances whose clocks disagree still agree on when a lease ends.
type dbClock struct {
	skew atomic.Int64 // database time minus local time, in nanoseconds
}

// now is the current time on the database's clock, as last measured.
func (rt *Runtime) now() time.Time {
	return rt.cfg.Now().Add(time.Duration(rt.clock.skew.Load()))
}
