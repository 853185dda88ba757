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

// dbClock is the offset from this process's clock (Config.Now) to the
// database's. Every lease and due decision is made on the database's clock,
// so that instances whose clocks disagree still agree on when a lease ends.
// The offset is measured at Start and at every heartbeat (measureClock).
type dbClock struct {
	skew atomic.Int64 // database time minus local time, in nanoseconds

	mu        sync.Mutex // serialises measurements and guards the fields below
	measured  bool       // a reading has been applied
	announced bool       // the INFO line about a notable skew was logged
}

// now is the current time on the database's clock, as last measured.
func (rt *Runtime) now() time.Time {
	return rt.cfg.Now().Add(time.Duration(rt.clock.skew.Load()))
}

// measureClock reads the database's clock and sets the skew to it: the
// database's time minus the midpoint of the local times (Config.Now) taken
// before and after the round trip. A reading whose round trip took longer
// than maxClockRoundTrip is ignored (the last good skew stays). The skew is
// applied as read, without smoothing, so a clock step on either side is
// picked up at the next heartbeat.
func (rt *Runtime) measureClock(ctx context.Context) error {
	c := &rt.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	before := rt.cfg.Now()
	dbTime, err := rt.store.databaseTime(ctx)
	after := rt.cfg.Now()
	if err != nil {
		return fmt.Errorf("argo: reading the database's clock: %w", err)
	}
	roundTrip := after.Sub(before)
	if roundTrip < 0 || roundTrip > maxClockRoundTrip {
		rt.log.Debug("argo: database clock reading ignored: round trip too long", "round_trip", roundTrip, "max", maxClockRoundTrip)
		return nil
	}
	skew := dbTime.Sub(before.Add(roundTrip / 2))
	old := time.Duration(c.skew.Swap(int64(skew)))
	switch {
	case c.measured && (skew-old > skewJump || old-skew > skewJump):
		rt.log.Warn("argo: the offset between this host's clock and the database's changed (a clock was stepped); leases and due times follow the database's clock",
			"instance", rt.cfg.InstanceID, "skew", skew, "previous_skew", old)
	case !c.announced && (skew > skewNotable || skew < -skewNotable):
		c.announced = true
		rt.log.Info("argo: this host's clock differs from the database's; leases and due times use the database's clock",
			"instance", rt.cfg.InstanceID, "skew", skew, "round_trip", roundTrip)
	}
	c.measured = true
	return nil
}

// databaseTime returns the database server's current time. MySQL: UTC
// (no session time zone, so no ambiguous hour at a DST change), to the
// microsecond. SQLite: the operating system's clock (SQLite reads it to the
// millisecond).
func (s *store) databaseTime(ctx context.Context) (time.Time, error) {
	q := "SELECT CAST(ROUND((julianday('now') - 2440587.5) * 86400000000.0) AS INTEGER)"
	if s.dialect == DialectMySQL {
		q = "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))"
	}
	var micros int64
	if err := s.db.QueryRowContext(ctx, q).Scan(&micros); err != nil {
		return time.Time{}, err
	}
	return time.UnixMicro(micros), nil
}
