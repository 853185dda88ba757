package maintenance

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "modernc.org/sqlite"

	"github.com/argo-retry/argo/internal/storage"
	_ "github.com/argo-retry/argo/internal/storage/mysqldriver"
	_ "github.com/argo-retry/argo/internal/storage/sqlitedriver"
	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/internal/testwait"
)

// forEachBackend runs fn against a fresh, migrated SQLite database and,
// with ARGO_TEST_MYSQL_DSN set, a fresh MariaDB/MySQL database.
func forEachBackend(t *testing.T, fn func(t *testing.T, st *storage.Store)) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			checkNoServiceGoroutines(t) // none left over from an earlier test
			fn(t, openStore(t, b.DSN))
		})
	}
}

// openStore opens dsn ("sqlite:PATH" or "mysql:DSN"), applies the
// migrations and returns the Store over it, closed when t ends.
func openStore(t *testing.T, dsn string) *storage.Store {
	t.Helper()
	dialect, rest, _ := strings.Cut(dsn, ":")
	source := rest
	if dialect == storage.DialectSQLite {
		source = "file:" + rest + "?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_txlock=immediate"
	}
	db, err := sql.Open(dialect, source)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if _, err := storage.Migrate(ctx, db, dialect); err != nil {
		t.Fatal(err)
	}
	st := storage.New(db, dialect, storage.Options{})
	t.Cleanup(st.Close)
	if err := st.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

// sampleTask is a task row of name in state, due at due.
func sampleTask(name string, state storage.State, due storage.Millis) *storage.Task {
	return &storage.Task{Name: name, State: state, MaxAttempts: 3, ExecuteTime: due, Parameter: `{}`,
		PerformanceWay: 1, ThreadWay: 2, GmtCreate: due, GmtModified: due}
}

func mustInsert(t *testing.T, st *storage.Store, tasks ...*storage.Task) {
	t.Helper()
	for _, task := range tasks {
		if err := st.Insert(context.Background(), nil, task); err != nil {
			t.Fatal(err)
		}
	}
}

func mustGet(t *testing.T, st *storage.Store, id int64) *storage.Task {
	t.Helper()
	task, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// waitFor polls cond until it holds, failing after d with what was
// awaited (testwait.For).
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, d, what, cond)
}

// service is what every maintenance service offers.
type service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// serviceGoroutines returns the stacks of the goroutines running a
// service's method (the test's own goroutine runs none at that moment).
func serviceGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "argo/internal/maintenance.(*") && !strings.Contains(g, "argo/internal/maintenance.serviceGoroutines") {
			out = append(out, g)
		}
	}
	return out
}

// checkNoServiceGoroutines fails unless, within a second (a goroutine
// that closed its done channel may still be returning), no goroutine runs
// a service's method.
func checkNoServiceGoroutines(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		left := serviceGoroutines()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d service goroutines left after Stop:\n%s", len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkStopBounded calls Stop with a context of 200ms while the service is
// stuck (in a callback), and fails unless it returns an error within 2s;
// then unstick lets it go, and a second Stop waits for it and leaves no
// goroutine.
func checkStopBounded(t *testing.T, s service, unstick func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	began := time.Now()
	err := s.Stop(ctx)
	took := time.Since(began)
	if err == nil {
		t.Fatal("Stop returned nil while the service was stuck")
	}
	if took > 2*time.Second {
		t.Fatalf("Stop with a 200ms context took %s", took)
	}
	t.Logf("Stop(200ms) of a stuck service returned after %s: %v", took.Round(time.Millisecond), err)
	unstick()
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	checkNoServiceGoroutines(t)
}

// gate blocks the callers of wait until open.
type gate struct {
	once sync.Once
	ch   chan struct{}
}

func newGate() *gate  { return &gate{ch: make(chan struct{})} }
func (g *gate) wait() { <-g.ch }
func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// logBuffer is a logger writing to a buffer safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// lines returns the logged lines containing s.
func (b *logBuffer) lines(s string) []string {
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// receive waits for a signal on ch, failing after 5s with what was awaited.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out after 5s waiting for %s", what)
		panic("unreachable")
	}
}
