package maintenance

import (
	"context"
	"time"
)

// periodic is the runner of the services that do one pass at a time on a
// tick: the rescuer, the orphan flagger, the purger and the blocked
// sweeper. A service embeds it, which gives it Start, Stop and Wake.
//
// Between Start and Stop its loop asks may (for every service, whether
// this instance holds the maintenance role; for the rescuer also whether
// the database has settled) at once and then once per tick, or at once
// after Wake, and where may says yes runs pass, at most once per every
// (zero: at every tick). Asking may is cheap and local; the pass is what
// touches the database. The pass runs on the loop's goroutine, so a
// service's pass state (cursors, timestamps) needs no lock; its context
// ends at Stop or when Start's context ends, and Stop waits for the pass
// in flight within Stop's context.
type periodic struct {
	life lifecycle
	wake chan struct{}

	tick  time.Duration             // how often may is asked (> 0)
	every time.Duration             // the least time between two passes (0: none)
	may   func() bool               // whether a pass may run now
	pass  func(ctx context.Context) // one pass of the service's work
}

// newPeriodic returns the runner of the service called name (for Stop's
// error), which asks may every tick and runs pass when it says yes.
func newPeriodic(name string, tick time.Duration, may func() bool, pass func(ctx context.Context)) periodic {
	return periodic{life: lifecycle{name: name}, wake: make(chan struct{}, 1), tick: tick, may: may, pass: pass}
}

// Start runs the loop on its own goroutine until Stop or until ctx ends:
// a pass now (if it may) and then one per interval. A second Start does
// nothing; Start after Stop returns ErrStopped.
func (p *periodic) Start(ctx context.Context) error {
	_, err := p.life.start(ctx, p.loop)
	return err
}

// Stop ends the loop and waits for it (and the pass in flight) until ctx
// ends; then it returns ctx's error wrapped. It may be called more than
// once.
func (p *periodic) Stop(ctx context.Context) error {
	_, err := p.life.stop(ctx)
	return err
}

// Wake makes the loop ask at once whether to run a pass (the maintenance
// role was just taken). It never blocks; wakes while one is pending are
// one wake.
func (p *periodic) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *periodic) loop(ctx context.Context) {
	var last time.Time // local clock: only the spacing matters
	for {
		if p.may() && (last.IsZero() || time.Since(last) >= p.every) {
			last = time.Now()
			p.pass(ctx)
		}
		if !sleep(ctx, p.tick, p.wake) {
			return
		}
	}
}
