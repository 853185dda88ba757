package failover

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/internal/testwait"
)

// testOptions are quick checks.
func testOptions(t *testing.T) Options {
	return Options{
		CheckInterval: 100 * time.Millisecond,
		CheckTimeout:  2 * time.Second,
		Logger:        slog.New(&logRecorder{t: t}),
	}
}

// startServers starts n private MariaDB servers (plain, not Galera).
func startServers(t *testing.T, n int) []*testdb.MySQLServer {
	t.Helper()
	servers := make([]*testdb.MySQLServer, n)
	for i := range servers {
		servers[i] = testdb.NewMySQLServer(t)
	}
	return servers
}

// addrOf returns the host:port of a private server.
func addrOf(t *testing.T, s *testdb.MySQLServer) string {
	t.Helper()
	mc, err := mysql.ParseDSN(s.ServerDSN)
	if err != nil {
		t.Fatal(err)
	}
	return mc.Addr
}

// listDSN returns a driver DSN (no database) naming the servers in order.
func listDSN(t *testing.T, servers []*testdb.MySQLServer, params string) string {
	t.Helper()
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = addrOf(t, s)
	}
	return "root@tcp(" + strings.Join(addrs, ",") + ")/" + params
}

// openList opens a handle over a failover connector for dsn; it is closed
// when the test ends.
func openList(t *testing.T, dsn string, opts Options) (*sql.DB, *Connector) {
	t.Helper()
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := ParseServerList(mc, dsn); err != nil {
		t.Fatal(err)
	}
	conn, err := NewConnector(mc, opts)
	if err != nil {
		t.Fatal(err)
	}
	fc, ok := conn.(*Connector)
	if !ok {
		t.Fatalf("NewConnector(%s) = %T, want *Connector", dsn, conn)
	}
	db := sql.OpenDB(fc)
	t.Cleanup(func() { db.Close() })
	return db, fc
}

// portOf returns the port of the server a query on db runs on.
func portOf(ctx context.Context, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (string, error) {
	var port int
	err := db.QueryRowContext(ctx, "SELECT @@port").Scan(&port)
	return strconv.Itoa(port), err
}

func portOfServer(t *testing.T, s *testdb.MySQLServer) string {
	_, port, _ := strings.Cut(addrOf(t, s), ":")
	return port
}

// adminExec runs a statement on one server directly.
func adminExec(t *testing.T, s *testdb.MySQLServer, query string) {
	t.Helper()
	db, err := sql.Open("mysql", s.ServerDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, query); err != nil {
		t.Fatalf("%s on %s: %v", query, addrOf(t, s), err)
	}
}

// waitFor polls cond until it holds, failing the test with what after
// the deadline (testwait.For).
func waitFor(t *testing.T, deadline time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, deadline, what, cond)
}

// logRecorder passes records to the test log and keeps their text.
type logRecorder struct {
	t     *testing.T
	mu    *sync.Mutex
	lines *[]string
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	line := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	h.t.Log(line)
	if h.mu != nil {
		h.mu.Lock()
		*h.lines = append(*h.lines, line)
		h.mu.Unlock()
	}
	return nil
}

// recordLogs makes opts' logger keep its lines; the returned func reads them.
func recordLogs(t *testing.T, opts *Options) func() []string {
	var mu sync.Mutex
	var lines []string
	opts.Logger = slog.New(&logRecorder{t: t, mu: &mu, lines: &lines})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

var _ = fmt.Sprint
