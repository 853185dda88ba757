package failover

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// startMonitor starts the goroutine that checks the servers (once, on the
// first Connect).
func (c *Connector) startMonitor() {
	go c.monitor()
}

// monitor checks every server each CheckInterval, or sooner when asked
// (askRecheck), and moves the current server when it became unusable or a
// preferred one has been usable for FailbackAfter. It returns when Close
// is called, having closed its own connections.
func (c *Connector) monitor() {
	defer close(c.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	defer c.closeProbes()
	ticker := time.NewTicker(c.opts.CheckInterval)
	defer ticker.Stop()
	gap := time.NewTimer(0)
	defer gap.Stop()
	first := true
	for {
		c.checkAll(ctx)
		c.choose(time.Now())
		if first {
			close(c.firstRound)
			first = false
		}
		gap.Reset(minRoundGap)
		select {
		case <-ctx.Done():
			return
		case <-gap.C:
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-c.recheck:
		}
	}
}

// checkAll checks every server at once, each bounded by CheckTimeout.
func (c *Connector) checkAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range c.servers {
		wg.Go(func() { c.checkOne(ctx, s) })
	}
	wg.Wait()
}

// checkOne checks s on the monitor's own connection to it (opened when
// missing, dropped after a failure) and marks s by the outcome. A check
// that fails on a connection kept from an earlier round is tried once more
// on a new one: a connection the server dropped (KILL, a restart of a
// proxy) says nothing of the server.
func (c *Connector) checkOne(ctx context.Context, s *server) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.CheckTimeout)
	defer cancel()
	reused := s.probe != nil
	r, err := c.probe(ctx, s)
	if err != nil && reused && ctx.Err() == nil && !stopping(c.stop) {
		r, err = c.probe(ctx, s)
	}
	if !stopping(c.stop) {
		s.noteGalera(r.galera)
	}
	switch {
	case stopping(c.stop):
		// cut short by Close: says nothing of the server
	case err != nil:
		c.markUnusable(s, err, "")
	case r.why != "":
		c.markUnusable(s, nil, r.why)
	default:
		c.markUsable(s, r)
	}
}

// probe runs the health check on the monitor's connection to s, opening
// it when missing; after a failure the connection is closed and dropped.
func (c *Connector) probe(ctx context.Context, s *server) (report, error) {
	if s.probe == nil {
		raw, err := s.connect(ctx)
		if err != nil {
			return report{}, err
		}
		dc, ok := raw.(fullConn)
		if !ok {
			raw.Close()
			return report{}, fmt.Errorf("failover: the MySQL driver's connection (%T) lacks an interface this package wraps", raw)
		}
		s.probe = dc
	}
	r, err := checkReport(ctx, s.probe)
	if err != nil {
		s.probe.Close()
		s.probe = nil
	}
	return r, err
}

func stopping(stop chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// closeProbes closes the monitor's connections.
func (c *Connector) closeProbes() {
	for _, s := range c.servers {
		if s.probe != nil {
			s.probe.Close()
			s.probe = nil
		}
	}
}

// choose moves the current server after a round of checks to the one
// elect returns (see there). Before the first connection there is no
// current server: the first choice is made then too, so that Connect finds
// it made.
func (c *Connector) choose(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.chooseLocked(now)
}
