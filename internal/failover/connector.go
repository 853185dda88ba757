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
)

// multiWriterFailback is how long, with Options.MultiWriter, a node listed
// before the current one must stay usable before it becomes current again.
const multiWriterFailback = 30 * time.Second

// minRoundGap is the least time between two rounds of health checks, so
// that a burst of connection errors asking for checks does not run them back
// to back.
const minRoundGap = 50 * time.Millisecond

// Options tune a Connector; the zero value means every default.
type Options struct {
	CheckInterval  time.Duration // DefaultCheckInterval when 0
	CheckTimeout   time.Duration // DefaultCheckTimeout when 0
	ConnectTimeout time.Duration // DefaultConnectTimeout when 0 and the DSN sets no timeout
	Logger         *slog.Logger  // slog.Default() (as of each record) when nil

	// MultiWriter (false by default) lets each process write through the
	// first usable Galera node of its own list (back to an earlier listed
	// one once it has been usable for 30 s), so processes whose lists start
	// with different nodes write through several nodes at once, and argo's
	// correctness rests on Galera's certification catching every pair of
	// conflicting writes, which it does not (docs/deployment.md). Without
	// it every process writes through the one node elect chooses. Plain
	// MySQL servers ignore it.
	MultiWriter bool
}

// causalWindow is how long after the Galera writer changed (or was first
// chosen) new and reused connections read with wsrep_sync_wait: two rounds
// of checks, by which every process that saw the same change has moved.
func (o Options) causalWindow() time.Duration {
	return 2 * (o.CheckInterval + o.CheckTimeout)
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

	mu          sync.Mutex
	current     *server   // nil until the first connection
	causalUntil time.Time // Galera: connections read with wsrep_sync_wait until then
	leaving     *server   // plain MySQL: the server current was moved off, replaced once a connection to current is handed out

	startOnce  sync.Once
	firstRound chan struct{} // closed when the monitor's first round of checks has ended
	stop       chan struct{} // closed by Close
	done       chan struct{} // closed when the monitor has returned
	closeOnce  sync.Once
	recheck    chan struct{} // asks the monitor for a round now
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
		opts:       opts.withDefaults(),
		firstRound: make(chan struct{}),
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
		recheck:    make(chan struct{}, 1),
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

// Connect returns a connection to the server writes go to (the current
// server, chosen by elect), waiting for the first round of health checks on
// the first call so that the first choice sees every server. When that
// server refuses the connection or fails its check it is marked unusable and
// the choice made again; when no server is known usable, the servers not
// replaced are tried in DSN order (one may have come back before the next
// round of checks).
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	select {
	case <-c.stop:
		return nil, errClosed
	default:
	}
	c.startOnce.Do(c.startMonitor)
	select {
	case <-c.firstRound:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.stop:
		return nil, errClosed
	}
	reasons := make([]string, len(c.servers))
	errs := make([]error, len(c.servers))
	tried := make([]bool, len(c.servers))
	// Another goroutine may switch the current server while this one
	// connects; a connection to a server that is no longer the one chosen
	// is dropped and the choice made again (a few times at most).
	for range 2*len(c.servers) + 1 {
		i := c.pick(tried)
		if i < 0 {
			break
		}
		s := c.servers[i]
		conn, err := c.open(ctx, s)
		if err != nil {
			tried[i] = true
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
	}
	for i, s := range c.servers {
		if reasons[i] == "" || s.replaced() != "" {
			reasons[i] = s.reasonNow()
		}
	}
	return nil, &NoServerError{Servers: c.Servers(), Reasons: reasons, Errs: errs}
}

// pick returns the index of the server to connect to, -1 when none is
// left: the chosen server when it is usable and not yet tried by this
// Connect, else the first server not tried and not replaced in DSN order.
func (c *Connector) pick(tried []bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.chooseLocked(time.Now())
	for i, s := range c.servers {
		if s == c.current && !tried[i] && s.usable() {
			return i
		}
	}
	for i, s := range c.servers {
		if !tried[i] && s.replaced() == "" {
			return i
		}
	}
	return -1
}

// open connects to s and, unless s is known usable, checks it on the new
// connection; s is marked by the outcome, unless the caller's own deadline
// cut the attempt short (which says nothing of the server).
func (c *Connector) open(ctx context.Context, s *server) (*conn, error) {
	dc, why, err := c.connectChecked(ctx, s)
	if err == nil && why == "" {
		cn := &conn{inner: dc, server: s, owner: c}
		if err := cn.syncCausal(ctx); err != nil {
			dc.Close()
			return nil, err
		}
		return cn, nil
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
	r, err := checkReport(cctx, dc)
	cancel()
	s.noteGalera(r.galera)
	if r.why != "" || err != nil {
		dc.Close()
		return nil, r.why, err
	}
	c.markUsable(s, r)
	return dc, "", nil
}

// adopt makes the choice again with what is now known of s (just checked)
// and reports whether s is the chosen server, to which connections may be
// handed out.
func (c *Connector) adopt(s *server) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.chooseLocked(time.Now())
	if c.current != s {
		return false
	}
	if old := c.leaving; old != nil && old != s {
		// Writes may now land on s: the server it took over from is
		// replaced for good.
		old.replace(s.addr)
	}
	c.leaving = nil
	return true
}

// galeraMode reports whether the servers are the nodes of a Galera
// cluster (a check found wsrep_on = ON on one of them).
func (c *Connector) galeraMode() bool {
	for _, s := range c.servers {
		if s.isGalera() {
			return true
		}
	}
	return false
}

// elect returns the server writes should go to, from what the last checks
// found, or nil when none is usable; c.mu is held.
//
// Galera: the usable node (Synced, in the primary component, writable) of
// the lowest rank (galeraRank: the lowest wsrep_gcomm_uuid, which is the
// lowest wsrep_local_index), whatever the current one: every process elects
// from what the nodes themselves report, so all write through one node
// whatever order their DSNs list the nodes in, and all move together when it
// stops being usable — or when a node ranked before it is synced again.
//
// Plain MySQL or MariaDB: the current server while it is usable; else the
// first usable server in DSN order that was never replaced. A server writes
// moved off is replaced for good (in this process) once a connection to its
// successor is handed out: it may be an old primary restarted writable while
// the promoted replica took its writes.
func (c *Connector) elect(now time.Time) *server {
	if c.opts.MultiWriter && c.galeraMode() {
		return c.electListed(now)
	}
	if c.galeraMode() {
		var best *server
		for _, s := range c.servers {
			if s.usable() && (best == nil || s.rankNow() < best.rankNow()) {
				best = s
			}
		}
		return best
	}
	if cur := c.current; cur != nil && cur.usable() && cur.replaced() == "" {
		return cur
	}
	for _, s := range c.servers {
		if s.usable() && s.replaced() == "" {
			return s
		}
	}
	return nil
}

// electListed is elect under Options.MultiWriter: the current node while
// it is usable, unless a node listed before it has been usable for
// multiWriterFailback; else the first usable node in DSN order.
func (c *Connector) electListed(now time.Time) *server {
	if cur := c.current; cur != nil && cur.usable() {
		for _, s := range c.servers {
			if s == cur || s.usableFor(now) >= multiWriterFailback {
				return s
			}
		}
	}
	for _, s := range c.servers {
		if s.usable() {
			return s
		}
	}
	return nil
}

// chooseLocked moves the current server to the one elect returns, when
// that is another; with none usable the current server stays (its
// connections leave the pool, inUse). c.mu is held.
func (c *Connector) chooseLocked(now time.Time) {
	old, to := c.current, c.elect(now)
	if to == nil || to == old {
		return
	}
	c.current = to
	if to.isGalera() {
		c.causalUntil = now.Add(c.opts.causalWindow())
	}
	switch {
	case old == nil:
		c.log().Info("argo: database server chosen", "server", to.addr, "servers", strings.Join(c.Servers(), ","))
	case !old.usable():
		if !old.isGalera() {
			c.leaving = old
		}
		c.log().Warn("argo: database failover", "from", old.addr, "to", to.addr, "reason", old.reasonNow())
	case c.opts.MultiWriter:
		c.log().Info("argo: database failback (multi-writer)", "from", old.addr, "to", to.addr)
	default:
		c.log().Info("argo: Galera writer moved to the node ranked first (lowest wsrep_gcomm_uuid) among those synced in the primary component", "from", old.addr, "to", to.addr)
	}
}

// causalNow reports whether connections to a Galera node should read with
// wsrep_sync_wait now: the writer changed (or was first chosen) less than
// causalWindow ago, so another process may still be writing through the
// node this one left, or the new writer may not yet have applied the last
// writes certified on the old one.
func (c *Connector) causalNow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Before(c.causalUntil)
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

// markUsable records that s passed a health check (r), and logs a return.
func (c *Connector) markUsable(s *server, r report) {
	if s.setUsable(time.Now(), r) {
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
		c.startOnce.Do(func() { close(c.done); close(c.firstRound) }) // no monitor starts after Close
		close(c.stop)
	})
	<-c.done
	return nil
}
