package runtime

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/argo-retry/argo/internal/testdb"
)

// failoverDatabase is the database created on every server of a list.
const failoverDatabase = "argo_failover"

// listedServers starts n private MariaDB servers, creates failoverDatabase
// with argo's schema on each, and returns them with the "mysql:" DSN naming
// all of them in order.
func listedServers(t *testing.T, n int) ([]*testdb.MySQLServer, []string, string) {
	t.Helper()
	var servers []*testdb.MySQLServer
	var addrs []string
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for range n {
		srv := testdb.NewMySQLServer(t)
		mc, err := mysql.ParseDSN(srv.ServerDSN)
		if err != nil {
			t.Fatal(err)
		}
		admin, err := sql.Open("mysql", srv.ServerDSN)
		if err != nil {
			t.Fatal(err)
		}
		_, err = admin.ExecContext(ctx, "CREATE DATABASE "+failoverDatabase+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
		admin.Close()
		if err != nil {
			t.Fatal(err)
		}
		db, dialect, err := OpenDB("mysql:root@tcp(" + mc.Addr + ")/" + failoverDatabase)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Migrate(ctx, db, dialect)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, srv)
		addrs = append(addrs, mc.Addr)
	}
	return servers, addrs, "mysql:root@tcp(" + strings.Join(addrs, ",") + ")/" + failoverDatabase
}

// defaultLogLines captures slog.Default() (where the failover connector
// logs) until the test ends, and returns a func listing the lines.
func defaultLogLines(t *testing.T) func() []string {
	prev := slog.Default()
	var mu sync.Mutex
	var lines []string
	slog.SetDefault(slog.New(&lineHandler{fn: func(line string) {
		mu.Lock()
		lines = append(lines, line)
		mu.Unlock()
		t.Log(line)
	}}))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(lines)
	}
}

type lineHandler struct{ fn func(string) }

func (h *lineHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *lineHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *lineHandler) WithGroup(string) slog.Handler            { return h }
func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	line := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	h.fn(line)
	return nil
}

// countLines counts the lines holding every one of parts.
func countLines(lines []string, parts ...string) int {
	n := 0
	for _, l := range lines {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(l, p) }) {
			n++
		}
	}
	return n
}

// submitStream submits calls from a few goroutines until stopped, and
// records when each submit succeeded and each refusal.
type submitStream struct {
	mu       sync.Mutex
	ok       []time.Time
	ids      []int64
	refusals []error
	wrong    atomic.Value // an error that wraps neither ErrNotPersisted nor ErrOutcomeUnknown
	stop     chan struct{}
	done     sync.WaitGroup
}

func startSubmitStream(rt *Runtime, def *TaskDef, workers int) *submitStream {
	s := &submitStream{stop: make(chan struct{})}
	for range workers {
		s.done.Go(func() {
			for {
				select {
				case <-s.stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				id, err := rt.Submit(ctx, Call{Task: def, Args: []byte(`{}`)})
				cancel()
				s.mu.Lock()
				if err == nil {
					s.ok = append(s.ok, time.Now())
					s.ids = append(s.ids, id)
				} else {
					s.refusals = append(s.refusals, err)
					if !errors.Is(err, ErrNotPersisted) && !errors.Is(err, ErrOutcomeUnknown) {
						s.wrong.Store(err)
					}
				}
				s.mu.Unlock()
			}
		})
	}
	return s
}

func (s *submitStream) close() { close(s.stop); s.done.Wait() }

// succeededSince counts the submits that succeeded after t.
func (s *submitStream) succeededSince(t time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, at := range s.ok {
		if at.After(t) {
			n++
		}
	}
	return n
}

// refusedSince returns the refusals recorded after the first n.
func (s *submitStream) refusalsAfter(n int) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.refusals[min(n, len(s.refusals)):])
}

func (s *submitStream) refusedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.refusals)
}

// longestGap returns the longest interval with no successful submit that
// overlaps event (the time of a kill), counted from the last success before
// it to the first after it.
func (s *submitStream) longestGap(event time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := slices.Clone(s.ok)
	slices.SortFunc(ok, func(a, b time.Time) int { return a.Compare(b) })
	var gap time.Duration
	for i := 1; i < len(ok); i++ {
		if ok[i].After(event) && ok[i-1].Before(event.Add(time.Minute)) {
			gap = max(gap, ok[i].Sub(ok[i-1]))
		}
		if ok[i-1].After(event) && ok[i-1].Sub(event) > 2*time.Second {
			break
		}
	}
	return gap
}

// onServer waits until every query of a burst on db runs on the server at
// addr (pooled connections elsewhere have left).
func onServer(t *testing.T, db *sql.DB, addr string, deadline time.Duration) {
	t.Helper()
	_, port, _ := strings.Cut(addr, ":")
	var last string
	waitFor(t, deadline, "queries to run on "+addr+" (last on port "+last+")", func() bool {
		for range 20 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := db.QueryRowContext(ctx, "SELECT @@port").Scan(&last)
			cancel()
			if err != nil || last != port {
				return false
			}
		}
		return true
	})
}

// TestFailoverAcrossServers runs a runtime on a DSN naming three plain
// MariaDB servers under a steady stream of submits: the first server killed
// (SIGKILL), submits go on through the second; the first, restarted
// writable, is not used again when the second is killed — it was replaced
// and may lack the second's writes — the third is (no restart of the
// runtime); a server set read_only=1 is not chosen; with no usable server,
// submits are refused with an error naming each server and why; they
// succeed again when one is usable again. The longest interval with no
// successful submit around each change is printed.
func TestFailoverAcrossServers(t *testing.T) {
	logs := defaultLogLines(t)
	srv, addrs, dsn := listedServers(t, 3)
	cfg := testConfigT(t, dsn)
	cfg.InstanceID = "failover-1"
	rt := startRuntime(t, cfg)
	def := &TaskDef{Name: "failover.steady", Policy: fastPolicy(3), Run: func(context.Context, []byte) error { return nil }}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	stream := startSubmitStream(rt, def, 4)
	defer stream.close()
	start := time.Now()
	waitFor(t, 30*time.Second, "50 submits", func() bool { return stream.succeededSince(start) >= 50 })
	onServer(t, rt.DB(), addrs[0], 10*time.Second)

	// Every connector (the runtime's pool, the finish pool) that saw an
	// event on addr logged it once.
	everyConnector := func(msg, addr string) func() bool {
		return func() bool {
			l := logs()
			return countLines(l, msg, "server="+addr) >= countLines(l, "argo: database server chosen")
		}
	}

	// The first server dies: submits go on through the second.
	killed := time.Now()
	srv[0].Kill(t)
	waitFor(t, 30*time.Second, "50 submits after the first server was killed", func() bool { return stream.succeededSince(killed) >= 50 })
	gap1 := stream.longestGap(killed)
	onServer(t, rt.DB(), addrs[1], 10*time.Second)

	// It comes back, the second dies: the third is used, not the first
	// (replaced by the second, though listed before the third).
	srv[0].Start(t)
	waitFor(t, 30*time.Second, "the connectors to see the first server back", func() bool {
		l := logs() // each connector that saw it down sees it back
		return countLines(l, "argo: database server usable again", "server="+addrs[0]) >= countLines(l, "argo: database server unusable", "server="+addrs[0])
	})
	killed2 := time.Now()
	srv[1].Kill(t)
	waitFor(t, 30*time.Second, "50 submits after the second server was killed", func() bool { return stream.succeededSince(killed2) >= 50 })
	gap2 := stream.longestGap(killed2)
	onServer(t, rt.DB(), addrs[2], 10*time.Second)

	// The third is made read-only: nothing is usable (the first up, but
	// replaced).
	adminExecOn(t, srv[2], "SET GLOBAL read_only = 1")
	waitFor(t, 30*time.Second, "the connectors to see the third server read-only", everyConnector("argo: database server unusable", addrs[2]))
	killed3 := time.Now()
	refusedBefore := stream.refusedCount()
	waitFor(t, 30*time.Second, "10 refused submits with every server down or read-only", func() bool { return len(stream.refusalsAfter(refusedBefore)) >= 10 })
	if n := stream.succeededSince(killed3.Add(time.Second)); n > 0 {
		t.Errorf("%d submits succeeded with no usable server (the read-only one chosen?)", n)
	}
	refusals := stream.refusalsAfter(refusedBefore)
	last := refusals[len(refusals)-1].Error()
	for _, want := range []string{"no usable MySQL server", addrs[0] + ": replaced by " + addrs[1], addrs[1] + ": ", addrs[2] + ": read-only"} {
		if !strings.Contains(last, want) {
			t.Errorf("refusal with no usable server %q does not say %q", last, want)
		}
	}
	if !errors.Is(refusals[len(refusals)-1], ErrNotPersisted) {
		t.Errorf("refusal with no usable server does not wrap ErrNotPersisted: %v", refusals[len(refusals)-1])
	}

	// The third is writable again: submits succeed again, without a
	// restart.
	adminExecOn(t, srv[2], "SET GLOBAL read_only = 0")
	back := time.Now()
	waitFor(t, 30*time.Second, "50 submits after the third server was writable again", func() bool { return stream.succeededSince(back) >= 50 })
	var firstBack time.Time
	stream.mu.Lock()
	for _, at := range stream.ok {
		if at.After(back) && (firstBack.IsZero() || at.Before(firstBack)) {
			firstBack = at
		}
	}
	stream.mu.Unlock()
	onServer(t, rt.DB(), addrs[2], 10*time.Second)
	stream.close()
	stream.stop = make(chan struct{}) // closed again by the deferred close
	if err := stream.wrong.Load(); err != nil {
		t.Errorf("a refused submit wrapped neither ErrNotPersisted nor ErrOutcomeUnknown: %v", err)
	}
	t.Logf("longest interval with no successful submit: %s after the first server was killed, %s after the second; first submit %s after a server came back from a full outage",
		gap1.Round(time.Millisecond), gap2.Round(time.Millisecond), firstBack.Sub(back).Round(time.Millisecond))
	for _, g := range []time.Duration{gap1, gap2} {
		if g > 5*time.Second {
			t.Errorf("a failover left submits failing for %s (over 5s on loopback)", g)
		}
	}
}

// adminExecOn runs a statement on one private server directly.
func adminExecOn(t *testing.T, s *testdb.MySQLServer, query string) {
	t.Helper()
	db, err := sql.Open("mysql", s.ServerDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// failoverGoroutines counts the goroutines of failover connectors.
func failoverGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := goruntime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "internal/failover.(*Connector).monitor(")
}

// TestServerListHandleCloses: closing a handle OpenDB opened on a server
// list, and stopping a runtime that opened its own (with its finish pool),
// stop their health checks.
func TestServerListHandleCloses(t *testing.T) {
	srv := testdb.NewMySQLServer(t)
	dsn := strings.Replace(srv.DSN(t), "tcp(127.0.0.1:", "tcp(127.0.0.1:1,127.0.0.1:", 1)
	db, _, err := OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	if failoverGoroutines() == 0 {
		t.Fatal("no health checks running on a handle over a server list")
	}
	db.Close()
	waitFor(t, 10*time.Second, "the health checks to stop after db.Close", func() bool { return failoverGoroutines() == 0 })

	cfg := testConfigT(t, dsn)
	rt, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	def := &TaskDef{Name: "failover.close", Policy: fastPolicy(2), Run: func(context.Context, []byte) error { return errors.New("fails once") }}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, rt, id, StateDead, 30*time.Second) // failures are finished through the finish pool
	if !rt.store.OnetripInUse() {
		t.Fatal("no finish pool on a server list")
	}
	if n := failoverGoroutines(); n < 2 {
		t.Errorf("%d health-check goroutines, want the runtime's pool's and the finish pool's", n)
	}
	if err := rt.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the health checks to stop after Stop", func() bool { return failoverGoroutines() == 0 })
}

// TestOpenDBServerList: a DSN naming several servers opens (no connection
// yet) and is shown with its list and without its password; a malformed
// list is refused with what to write, without the password; the driver's
// own DSN errors still come first.
func TestOpenDBServerList(t *testing.T) {
	dsn := "mysql:app:s3cret@tcp(10.0.0.1:3306,10.0.0.2)/argo?timeout=1s"
	db, dialect, err := OpenDB(dsn)
	if err != nil {
		t.Fatalf("OpenDB(%s): %v", RedactDSN(dsn), err)
	}
	db.Close()
	if dialect != DialectMySQL {
		t.Errorf("dialect %s", dialect)
	}
	if got, want := RedactDSN(dsn), "mysql:app:***@tcp(10.0.0.1:3306,10.0.0.2)/argo?timeout=1s"; got != want {
		t.Errorf("RedactDSN = %s, want %s", got, want)
	}
	for _, bad := range []string{
		"mysql:app:s3cret@tcp(10.0.0.1:3306,,10.0.0.2:3306)/argo",
		"mysql:app:s3cret@tcp(10.0.0.1:3306, 10.0.0.2:3306)/argo",
		"mysql:app:s3cret@tcp(10.0.0.1:3306,10.0.0.1)/argo",
		"mysql:app:s3cret@tcp(10.0.0.1:3306,10.0.0.2:port)/argo",
	} {
		_, _, err := OpenDB(bad)
		if err == nil {
			t.Errorf("OpenDB(%s) accepted it", bad)
			continue
		}
		if !strings.Contains(err.Error(), "tcp(10.0.0.1:3306,10.0.0.2:3306,10.0.0.3:3306)") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("OpenDB(%s) = %q: want what to write, and no password", bad, err)
		}
	}
}

// TestFailoverLogsToConfigLogger: the failover connector of a DSN naming
// several servers, which OpenDB makes without a logger, logs to the
// runtime's Config.Logger once Start runs on it, not to slog.Default().
func TestFailoverLogsToConfigLogger(t *testing.T) {
	defaultLines := defaultLogLines(t)
	base := testdb.MySQLDSN(t)
	dsn := strings.Replace(base, "tcp(127.0.0.1:", "tcp(127.0.0.1:1,127.0.0.1:", 1)
	if dsn == base {
		t.Fatalf("test DSN %q has no tcp(127.0.0.1:…) address to put a server list in", RedactDSN(base))
	}
	var mu sync.Mutex
	var lines []string
	cfg := testConfigT(t, dsn)
	cfg.AutoMigrate = true
	cfg.Logger = slog.New(&lineHandler{fn: func(line string) {
		mu.Lock()
		lines = append(lines, line)
		mu.Unlock()
		t.Log(line)
	}})
	startRuntime(t, cfg)
	waitFor(t, 10*time.Second, "the connector's line about the unusable server in Config.Logger", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return countLines(lines, "database server", "127.0.0.1:1") > 0
	})
	if n := countLines(defaultLines(), "database server"); n > 0 {
		t.Errorf("%d failover lines went to slog.Default(), want them all in Config.Logger", n)
	}
}
