package failover

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Defaults of Options.
const (
	// DefaultCheckInterval is how often every server is checked.
	DefaultCheckInterval = time.Second
	// DefaultCheckTimeout bounds one health check of one server, connecting
	// included.
	DefaultCheckTimeout = 2 * time.Second
	// DefaultConnectTimeout bounds one connection attempt to one server
	// (dial and handshake) when the DSN sets no timeout= (the driver's own
	// default is the system's, minutes for a host that does not answer, and
	// its timeout= covers only the dial).
	DefaultConnectTimeout = 3 * time.Second
	// DefaultFailbackAfter is how long a server listed before the current
	// one must stay usable before it becomes current again.
	DefaultFailbackAfter = 30 * time.Second
)

// minRoundGap is the least time between two rounds of health checks, so
// that a burst of connection errors asking for checks does not run them back
// to back.
const minRoundGap = 50 * time.Millisecond

// Options tune a Connector; the zero value means every default.
type Options struct {
	CheckInterval  time.Duration // DefaultCheckInterval when 0
	CheckTimeout   time.Duration // DefaultCheckTimeout when 0
	ConnectTimeout time.Duration // DefaultConnectTimeout when 0 and the DSN sets no timeout
	FailbackAfter  time.Duration // DefaultFailbackAfter when 0; negative: never fail back
	Logger         *slog.Logger  // slog.Default() (as of each record) when nil
}

func (o Options) withDefaults() Options {
	if o.CheckInterval <= 0 {
		o.CheckInterval = DefaultCheckInterval
	}
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = DefaultCheckTimeout
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.FailbackAfter == 0 {
		o.FailbackAfter = DefaultFailbackAfter
	}
	return o
}

// Connector hands out connections to one usable server of several (see the
// package documentation). It is safe for concurrent use; Close stops its
// health checks.
type Connector struct {
	servers []*server // in DSN order
	opts    Options
	driver  driver.Driver
	logger  atomic.Pointer[slog.Logger] // SetLogger's; used when opts.Logger is nil

	mu      sync.Mutex
	current *server // nil until the first connection

	startOnce sync.Once
	stop      chan struct{} // closed by Close
	done      chan struct{} // closed when the monitor has returned
	closeOnce sync.Once
	recheck   chan struct{} // asks the monitor for a round now
}

// NewConnector returns a connector for the servers of mc: the driver's own
// connector when mc names one server (everything as without this package),
// a *Connector when its Addr holds a list (ParseServerList).
func NewConnector(mc *mysql.Config, opts Options) (driver.Connector, error) {
	addrs := serverAddresses(mc)
	if len(addrs) == 1 {
		return mysql.NewConnector(mc)
	}
	return newConnector(mc, addrs, opts)
}

func newConnector(mc *mysql.Config, addrs []string, opts Options) (*Connector, error) {
	c := &Connector{
		opts:    opts.withDefaults(),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		recheck: make(chan struct{}, 1),
	}
	for _, addr := range addrs {
		cfg := mc.Clone()
		cfg.Addr = addr
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, fmt.Errorf("server %s: %w", addr, err)
		}
		timeout := cfg.Timeout
		if timeout == 0 {
			timeout = c.opts.ConnectTimeout
		}
		c.servers = append(c.servers, &server{addr: addr, connector: conn, connectTimeout: timeout, password: mc.Passwd})
		c.driver = conn.Driver()
	}
	return c, nil
}

// Driver returns the MySQL driver.
func (c *Connector) Driver() driver.Driver { return c.driver }

// Servers returns the addresses of the servers, in DSN order.
func (c *Connector) Servers() []string {
	addrs := make([]string, len(c.servers))
	for i, s := range c.servers {
		addrs[i] = s.addr
	}
	return addrs
}

// Current returns the address of the server new connections go to, or ""
// before the first connection.
func (c *Connector) Current() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current == nil {
		return ""
	}
	return c.current.addr
}

// SetLogger sends the connector's log lines (failovers, servers down and
// back) to l from now on; nil means slog.Default(). Options.Logger, when
// set, takes precedence. The runtime calls it at Start with Config.Logger,
// since OpenDB, which makes the connector, has no logger.
func (c *Connector) SetLogger(l *slog.Logger) { c.logger.Store(l) }

func (c *Connector) log() *slog.Logger {
	if c.opts.Logger != nil {
		return c.opts.Logger
	}
	if l := c.logger.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// NoServerError is the error of a connection when no server was usable: the
// reason of each, in DSN order. errors.As finds the servers' own errors.
type NoServerError struct {
	Servers []string // addresses, in DSN order
	Reasons []string // why each is not usable
	Errs    []error  // the error of each server (nil where the reason is no error)
}

func (e *NoServerError) Error() string {
	parts := make([]string, len(e.Servers))
	for i := range e.Servers {
		parts[i] = e.Servers[i] + ": " + e.Reasons[i]
	}
	return "no usable MySQL server (up, writable, and on Galera synced in the primary component) among " +
		strings.Join(parts, "; ")
}

func (e *NoServerError) Unwrap() []error {
	var errs []error
	for _, err := range e.Errs {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// errClosed is the error of Connect after Close.
var errClosed = errors.New("failover: connector closed")

// Connect returns a connection to the current server if it is usable, else
// to the first usable server in DSN order; servers known to be unusable are
// tried last (one may have come back before the next health check). A
// server that refuses the connection, or fails the health check run on a
// new connection to a server not known usable, is marked unusable.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	select {
	case <-c.stop:
		return nil, errClosed
	default:
	}
	c.startOnce.Do(c.startMonitor)
	reasons := make([]string, len(c.servers))
	errs := make([]error, len(c.servers))
	tried := make([]bool, len(c.servers))
	// Another goroutine may switch the current server while this one
	// connects; a connection to a server that is no longer preferred is
	// dropped and the choice made again (a few times at most).
	for round := 0; round <= len(c.servers); round++ {
		for _, i := range c.preference(tried) {
			s := c.servers[i]
			tried[i] = true
			conn, err := c.open(ctx, s)
			if err != nil {
				reasons[i], errs[i] = s.reasonOf(err), err
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				continue
			}
			if c.adopt(s) {
				return conn, nil
			}
			conn.inner.Close()
			clear(tried)
			break
		}
		if !anyFalse(tried) {
			break
		}
	}
	for i, s := range c.servers {
		if reasons[i] == "" {
			reasons[i] = s.reasonNow()
		}
	}
	return nil, &NoServerError{Servers: c.Servers(), Reasons: reasons, Errs: errs}
}

func anyFalse(bs []bool) bool {
	for _, b := range bs {
		if !b {
			return true
		}
	}
	return false
}

// preference returns the indexes of the servers not yet tried, in the
// order to try them: the current server if usable, the other servers not
// known unusable in DSN order, then the servers known unusable in DSN order.
func (c *Connector) preference(tried []bool) []int {
	c.mu.Lock()
	cur := c.current
	c.mu.Unlock()
	var first, usable, unusable []int
	for i, s := range c.servers {
		switch {
		case tried[i]:
		case s == cur && s.usable():
			first = append(first, i)
		case s.knownUnusable():
			unusable = append(unusable, i)
		default:
			usable = append(usable, i)
		}
	}
	return append(append(first, usable...), unusable...)
}

// open connects to s and, unless s is known usable, checks it on the new
// connection; s is marked by the outcome, unless the caller's own deadline
// cut the attempt short (which says nothing of the server).
func (c *Connector) open(ctx context.Context, s *server) (*conn, error) {
	dc, why, err := c.connectChecked(ctx, s)
	if err == nil && why == "" {
		return &conn{inner: dc, server: s, owner: c}, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	c.markUnusable(s, err, why)
	if err == nil {
		err = errors.New(why)
	}
	return nil, err
}

// connectChecked opens a connection to s and, unless s is known usable,
// runs the health check on it (marking s usable when it passes); the
// connection is closed unless it is returned.
func (c *Connector) connectChecked(ctx context.Context, s *server) (fullConn, string, error) {
	raw, err := s.connect(ctx)
	if err != nil {
		return nil, "", err
	}
	dc, ok := raw.(fullConn)
	if !ok {
		raw.Close()
		return nil, "", fmt.Errorf("failover: the MySQL driver's connection (%T) lacks an interface this package wraps", raw)
	}
	if s.usable() {
		return dc, "", nil
	}
	cctx, cancel := context.WithTimeout(ctx, c.opts.CheckTimeout)
	why, err := checkServer(cctx, dc)
	cancel()
	if why != "" || err != nil {
		dc.Close()
		return nil, why, err
	}
	c.markUsable(s)
	return dc, "", nil
}

// adopt makes s the current server unless another usable server became
// current meanwhile; it reports whether connections to s may be handed out.
func (c *Connector) adopt(s *server) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.current
	switch {
	case old == s:
		return true
	case old == nil:
		c.current = s
		c.log().Info("argo: database server chosen", "server", s.addr, "servers", strings.Join(c.Servers(), ","))
		return true
	case old.usable():
		return false
	}
	c.current = s
	c.log().Warn("argo: database failover", "from", old.addr, "to", s.addr, "reason", old.reasonNow())
	return true
}

// inUse reports whether connections to s may stay in the pool: s is the
// current server and not marked unusable.
func (c *Connector) inUse(s *server) bool {
	c.mu.Lock()
	cur := c.current
	c.mu.Unlock()
	return s == cur && s.usable()
}

// markUnusable records that s is not usable, for err or (err nil) why, and
// logs the change.
func (c *Connector) markUnusable(s *server, err error, why string) {
	if why == "" {
		why = s.reasonOf(err)
	}
	if s.setUnusable(why) {
		c.log().Warn("argo: database server unusable", "server", s.addr, "reason", why)
	}
}

// markUsable records that s passed a health check, and logs a return.
func (c *Connector) markUsable(s *server) {
	if s.setUsable(time.Now()) {
		c.log().Info("argo: database server usable again", "server", s.addr)
	}
}

// askRecheck has the monitor check the servers now (without waiting).
func (c *Connector) askRecheck() {
	select {
	case c.recheck <- struct{}{}:
	default:
	}
}

// Close stops the health checks and waits for them to return; connections
// already handed out stay open (sql.DB closes them). Called by sql.DB.Close.
func (c *Connector) Close() error {
	c.closeOnce.Do(func() {
		c.startOnce.Do(func() { close(c.done) }) // no monitor starts after Close
		close(c.stop)
	})
	<-c.done
	return nil
}
