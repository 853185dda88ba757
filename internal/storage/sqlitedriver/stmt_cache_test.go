package sqlitedriver_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/storage/sqlitedriver"
	"github.com/argo-retry/argo/internal/testdb"
)

// parseCounter wraps the engine's driver and counts what makes SQLite
// parse a statement: each prepare, and each Exec or Query run on the
// connection itself (which prepares, runs and finalizes), by text; and the
// prepared statements not yet closed.
type parseCounter struct {
	base driver.Driver

	mu     sync.Mutex
	parses map[string]int
	open   int // prepared statements not closed
}

func newParseCounter() *parseCounter {
	db, err := sql.Open(sqlitedriver.Name, "")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	return &parseCounter{base: db.Driver(), parses: map[string]int{}}
}

func (p *parseCounter) parsed(query string) {
	p.mu.Lock()
	p.parses[query]++
	p.mu.Unlock()
}

func (p *parseCounter) opened(n int) {
	p.mu.Lock()
	p.open += n
	p.mu.Unlock()
}

// take returns the parses so far (total, distinct texts) and starts again.
func (p *parseCounter) take() (total, distinct int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range p.parses {
		total += n
	}
	distinct = len(p.parses)
	p.parses = map[string]int{}
	return total, distinct
}

func (p *parseCounter) Open(name string) (driver.Conn, error) {
	c, err := p.base.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingConn{engineConn: c.(engineConn), p: p}, nil
}

type engineConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
}

type countingConn struct {
	engineConn
	p *parseCounter
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.p.parsed(query)
	st, err := c.engineConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.p.opened(1)
	return &countingStmt{Stmt: st, p: c.p}, nil
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.p.parsed(query)
	return c.engineConn.ExecContext(ctx, query, args)
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.p.parsed(query)
	return c.engineConn.QueryContext(ctx, query, args)
}

type countingStmt struct {
	driver.Stmt
	p *parseCounter
}

func (s *countingStmt) Close() error {
	s.p.opened(-1)
	return s.Stmt.Close()
}

func (s *countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}

// openCounted opens a new SQLite file through the statement cache over a
// parseCounter, with at most conns connections, migrated.
func openCounted(t *testing.T, conns int) (*sql.DB, *parseCounter) {
	t.Helper()
	p := newParseCounter()
	path := strings.TrimPrefix(testdb.SQLiteDSN(t), "sqlite:")
	cn, err := sqlitedriver.CachingDriver(p).(driver.DriverContext).OpenConnector("file:" + path + "?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(cn)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	t.Cleanup(func() { db.Close() })
	if _, err := storage.Migrate(context.Background(), db, sqlitedriver.Name); err != nil {
		t.Fatal(err)
	}
	return db, p
}

// A task's statements (insert, claim, finish, reads in and out of
// transactions) are parsed once per connection, not once per call: 60
// tasks through a Store on two connections parse each distinct text at most
// twice. Without the cache every call parses (4+ per task).
func TestStmtCacheParsesEachStatementOncePerConnection(t *testing.T) {
	const conns, tasks = 2, 60
	db, p := openCounted(t, conns)
	s := storage.New(db, sqlitedriver.Name, storage.Options{WriteLock: &sync.Mutex{}})
	t.Cleanup(s.Close)
	ctx := context.Background()
	p.take()
	calls := 0
	for i := range tasks {
		now := storage.Millis(1000 + i)
		task := &storage.Task{Name: "t", State: argotype.StatePending, MaxAttempts: 3, ExecuteTime: now, Parameter: `{}`,
			PerformanceWay: argotype.Immediate, ThreadWay: argotype.Async, ShardKey: 1, RetryPolicyJSON: `{}`, GmtCreate: now, GmtModified: now}
		if err := s.Insert(ctx, nil, task); err != nil {
			t.Fatal(err)
		}
		c, err := s.ClaimByID(ctx, task.ID, task.ShardKey, argotype.StatePending, "w", now, now+1000)
		if err != nil || c == nil {
			t.Fatalf("claim %d: %v, %v", task.ID, c, err)
		}
		f := storage.Finishing{Fence: storage.Fence{ID: c.ID, Shard: c.ShardKey, Owner: c.LeaseOwner, Attempt: c.ExecuteTimes, From: c.State},
			To: argotype.StateSucceeded, Due: c.ExecuteTime,
			History: &storage.Attempt{TaskPK: c.ID, Attempt: c.ExecuteTimes, Kind: "attempt", Worker: "w", StartedAt: now, FinishedAt: now + 1, Outcome: argotype.OutcomeSucceeded}}
		if err := s.Finish(ctx, f, now+1); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, task.ID)
		if err != nil || got.State != argotype.StateSucceeded {
			t.Fatalf("task %d after its finish: %+v, %v", task.ID, got, err)
		}
		calls += 4
	}
	total, distinct := p.take()
	t.Logf("%d tasks (%d+ store calls): %d parses of %d distinct statements on %d connections", tasks, calls, total, distinct, conns)
	if distinct == 0 || total > distinct*conns {
		t.Fatalf("%d parses of %d distinct statements on %d connections: statements are parsed again per call, want each parsed at most once per connection", total, distinct, conns)
	}
}

// A statement whose rows are still open is not run again underneath them:
// the same text queried meanwhile on the same connection (in a
// transaction) runs uncached, and both give their own rows.
func TestStmtCacheSameTextWhileRowsOpen(t *testing.T) {
	db, _ := openCounted(t, 1)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE n (v INTEGER)"); err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= 3; v++ {
		if _, err := db.ExecContext(ctx, "INSERT INTO n (v) VALUES (?)", v); err != nil {
			t.Fatal(err)
		}
	}
	const q = "SELECT v FROM n WHERE v >= ? ORDER BY v"
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	outer, err := tx.QueryContext(ctx, q, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for outer.Next() {
		var v int
		if err := outer.Scan(&v); err != nil {
			t.Fatal(err)
		}
		var first int
		if err := tx.QueryRowContext(ctx, q, v).Scan(&first); err != nil {
			t.Fatalf("the same text while its rows are open: %v", err)
		}
		got = append(got, fmt.Sprintf("%d:%d", v, first))
	}
	if err := outer.Err(); err != nil {
		t.Fatal(err)
	}
	outer.Close()
	if want := "1:1 2:2 3:3"; strings.Join(got, " ") != want {
		t.Fatalf("rows %q, want %q", strings.Join(got, " "), want)
	}
}

// The cache is bounded (least recently used out, each evicted statement
// closed), and closing the handle closes every cached statement.
func TestStmtCacheBoundedAndClosed(t *testing.T) {
	old := sqlitedriver.StmtCacheSize
	sqlitedriver.StmtCacheSize = 4
	t.Cleanup(func() { sqlitedriver.StmtCacheSize = old })
	db, p := openCounted(t, 1)
	ctx := context.Background()
	for i := range 20 {
		var n int
		if err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT %d + ?", i), 1).Scan(&n); err != nil || n != i+1 {
			t.Fatalf("SELECT %d + 1 = %d, %v", i, n, err)
		}
		p.mu.Lock()
		open := p.open
		p.mu.Unlock()
		if open > 4 {
			t.Fatalf("after %d distinct statements, %d are kept prepared with StmtCacheSize 4", i+1, open)
		}
	}
	db.Close()
	p.mu.Lock()
	open := p.open
	p.mu.Unlock()
	if open != 0 {
		t.Fatalf("%d statements left open after the handle closed", open)
	}
}

// A statement prepared explicitly (database/sql's Prepare, as the group
// commit prepares its INSERT in each group's transaction) is the cached one:
// preparing the same text again, once the last was closed, parses nothing.
func TestStmtCacheExplicitPrepare(t *testing.T) {
	db, p := openCounted(t, 1)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE n (v INTEGER)"); err != nil {
		t.Fatal(err)
	}
	const q = "INSERT INTO n (v) VALUES (?)"
	p.take()
	for v := range 10 {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		st, err := tx.PrepareContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if _, err := st.ExecContext(ctx, 10*v+i); err != nil {
				t.Fatal(err)
			}
		}
		st.Close()
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(DISTINCT v) FROM n").Scan(&n); err != nil || n != 20 {
		t.Fatalf("%d distinct rows, %v; want 20", n, err)
	}
	p.mu.Lock()
	got := p.parses[q]
	p.mu.Unlock()
	if got != 1 {
		t.Fatalf("%q parsed %d times for 10 prepares on one connection, want once", q, got)
	}
}
