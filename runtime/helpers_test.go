package runtime

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/internal/testwait"
	"github.com/jmoiron/sqlx"
)

// forEachBackend runs fn as a subtest against SQLite and MariaDB.
//
// Parallel tests: a test calls t.Parallel() (commented "owns its databases,
// shares no process-wide state, asserts no timing") only when each holds:
// its databases are its own (testdb.SQLiteDSN / MySQLDSN / Backends, never a
// server it restarts or a Galera node it disrupts); it sets no package or
// process state (hooks such as flowClaimWait or watchCommitEnded, slog's
// default, environment variables, the failover goroutine count); and it
// asserts outcomes, not how long they took or that they started on time —
// its waits have deadlines many times what an unloaded machine needs. A
// parallel test starts once every sequential test has ended, beside at
// most -parallel (GOMAXPROCS by default) others.
func forEachBackend(t *testing.T, fn func(t *testing.T, dsn string)) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { fn(t, b.DSN) })
	}
}

// quietLogger drops logs unless -v; under -v it writes every record, DEBUG
// included, to standard error (shared by parallel tests, so lines of
// different tests may interleave: use testLogger for a logger bound to one
// test).
func quietLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testLogger returns a logger that writes through t.Log, attributed to t even
// when tests run in parallel: under -v every record (DEBUG included) shows,
// otherwise INFO and above show with a failing test's output. Records logged
// after t has ended (a goroutine that outlived the test) go to standard error
// under -v instead of panicking.
func testLogger(t testing.TB) *slog.Logger {
	w := &testLogWriter{t: t}
	t.Cleanup(w.end) // registered first, so it runs after every later cleanup (Stop included)
	level := slog.LevelInfo
	if testing.Verbose() {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// testLogWriter passes each formatted record to t.Log while t runs.
type testLogWriter struct {
	t     testing.TB
	mu    sync.Mutex
	ended bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	line := strings.TrimSuffix(string(p), "\n")
	if w.ended {
		if testing.Verbose() {
			fmt.Fprintf(os.Stderr, "%s (after the test ended): %s\n", w.t.Name(), line)
		}
		return len(p), nil
	}
	w.t.Log(line)
	return len(p), nil
}

func (w *testLogWriter) end() {
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
}

// testConfig is a fast-moving configuration for tests.
func testConfig(dsn string) Config {
	return Config{
		DSN: dsn, AutoMigrate: true, PollInterval: 20 * time.Millisecond, LeaseDuration: 2 * time.Second,
		HeartbeatInterval: 200 * time.Millisecond, UnknownTaskDelay: 100 * time.Millisecond,
		ShutdownTimeout: 5 * time.Second, Logger: quietLogger(),
	}
}

// testConfigT is testConfig with its logs written through t.Log (see
// testLogger).
func testConfigT(t testing.TB, dsn string) Config {
	cfg := testConfig(dsn)
	cfg.Logger = testLogger(t)
	return cfg
}

func startRuntime(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	rt, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { rt.Stop(context.Background()) })
	return rt
}

// waitFor polls cond until it holds or the timeout passes (testwait.For).
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, timeout, what, cond)
}

// waitState waits until task id is in state want.
func waitState(t testing.TB, rt *Runtime, id int64, want State, timeout time.Duration) *Task {
	t.Helper()
	var last *Task
	waitFor(t, timeout, "task to become "+want.String(), func() bool {
		task, err := rt.Inspector().Get(context.Background(), id)
		if err != nil {
			t.Fatalf("Get(%d): %v", id, err)
		}
		last = task
		return task.State == want
	})
	return last
}

// fastPolicy retries quickly.
func fastPolicy(maxAttempts int) RetryPolicy {
	return RetryPolicy{MaxAttempts: maxAttempts, Backoff: BackoffFixed, Initial: 10 * time.Millisecond, Jitter: Jitter{Kind: JitterNone}}
}

// calls counts calls per key, safely.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) inc(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key]++
	return c.n[key]
}

func (c *calls) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// waitGroupDone waits for wg until timeout passes, then fails the test
// saying what it waited for (goroutines left behind are the test's bug).
func waitGroupDone(t testing.TB, wg *sync.WaitGroup, timeout time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// receive returns the next value from ch, or fails the test after timeout.
func receive[T any](t testing.TB, ch <-chan T, timeout time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
		var zero T
		return zero
	}
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// dbx is the store's handle with sqlx's helpers, for tests that read rows
// directly.
func dbx(s *storage.Store) *sqlx.DB { return sqlx.NewDb(s.DB(), s.Dialect()) }

func nowMillis() Millis { return toMillis(time.Now()) }
