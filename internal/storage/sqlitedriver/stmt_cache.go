package sqlitedriver

import (
	"container/list"
	"context"
	"database/sql"
	"database/sql/driver"
	"reflect"
	"sync"
)

// StmtCacheSize is how many prepared statements each SQLite connection
// opened through Open or CachingDriver keeps, least recently used first
// out; 256 by default (in insert+work a connection's statements, with the
// generated-by-n variants, all fit: none is prepared again after the
// connection's first calls). 0 turns the cache
// off: every statement is parsed on each call, as the plain "sqlite" driver
// does. Set it before opening a handle (tests and benchmarks compare both).
var StmtCacheSize = 256

// Every statement argo ran on SQLite was parsed again on each call
// (database/sql's Exec and Query on a connection prepare, run and finalize):
// the SQL parser took a third of a task's CPU on the embedded default (half
// under the race detector). A
// connection opened here keeps the statements it prepared, keyed by their
// text, and runs each again from its compiled form: in and out of
// transactions (a transaction runs on one connection), for every caller of
// the handle, with no change to them. A SQLite statement belongs to its
// connection, so the cache does too, and is closed with it; the engine
// prepares a cached statement again by itself when the schema changed.

// Open opens the SQLite database of name (a "file:…" DSN of
// modernc.org/sqlite) as a *sql.DB whose connections reuse their prepared
// statements (StmtCacheSize).
func Open(name string) *sql.DB {
	return sql.OpenDB(connector{d: CachingDriver(nil), name: name})
}

// CachingDriver returns a database/sql driver whose connections are base's
// (nil: modernc.org/sqlite's) and keep their prepared statements
// (StmtCacheSize). runtime.OpenDB's handles have it as their Driver.
func CachingDriver(base driver.Driver) driver.Driver {
	if base == nil {
		base = sqliteDriver()
	}
	return cachingDriver{base: base}
}

// sqliteDriver is the driver registered as "sqlite" by modernc.org/sqlite.
func sqliteDriver() driver.Driver {
	db, err := sql.Open(Name, "")
	if err != nil {
		panic("sqlitedriver: modernc.org/sqlite is not registered: " + err.Error())
	}
	defer db.Close()
	return db.Driver()
}

type cachingDriver struct{ base driver.Driver }

func (d cachingDriver) Open(name string) (driver.Conn, error) {
	c, err := d.base.Open(name)
	if err != nil || StmtCacheSize <= 0 {
		return c, err
	}
	return newCachedConn(c, StmtCacheSize), nil
}

func (d cachingDriver) OpenConnector(name string) (driver.Connector, error) {
	return connector{d: d, name: name}, nil
}

type connector struct {
	d    driver.Driver
	name string
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.name) }
func (c connector) Driver() driver.Driver                        { return c.d }

// base is what a cached connection needs of the engine's connection
// (modernc.org/sqlite's implements all of it).
type base interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
}

// cachedConn is a connection with its statement cache. database/sql uses a
// connection from one goroutine at a time; mu guards the cache all the same.
type cachedConn struct {
	base
	max int

	mu    sync.Mutex
	byKey map[string]*list.Element // → *cachedStmt
	lru   list.List                // front: most recently used
}

type cachedStmt struct {
	query string
	st    driver.Stmt
	// busy: its rows are open (a statement runs once at a time; another
	// call of the same text meanwhile runs uncached).
	busy bool
	// evicted: dropped from the cache while busy; closed when its rows are.
	evicted bool
}

func newCachedConn(c driver.Conn, max int) driver.Conn {
	b, ok := c.(base)
	if !ok {
		return c // not the engine this was written for: no cache
	}
	return &cachedConn{base: b, max: max, byKey: map[string]*list.Element{}}
}

// acquire returns the cached statement of query, prepared on a miss, marked
// busy; nil (and no error) when it is busy already: the caller runs query
// uncached.
func (c *cachedConn) acquire(ctx context.Context, query string) (*cachedStmt, error) {
	c.mu.Lock()
	if e, ok := c.byKey[query]; ok {
		cs := e.Value.(*cachedStmt)
		if cs.busy {
			c.mu.Unlock()
			return nil, nil
		}
		c.lru.MoveToFront(e)
		cs.busy = true
		c.mu.Unlock()
		return cs, nil
	}
	c.mu.Unlock()
	st, err := c.base.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if !runsWithContext(st) {
		_ = st.Close()
		return nil, nil
	}
	cs := &cachedStmt{query: query, st: st, busy: true}
	c.mu.Lock()
	c.byKey[query] = c.lru.PushFront(cs)
	var drop []driver.Stmt
	for e := c.lru.Back(); c.lru.Len() > c.max && e != nil; {
		prev := e.Prev()
		old := e.Value.(*cachedStmt)
		if old != cs {
			c.lru.Remove(e)
			delete(c.byKey, old.query)
			if old.busy {
				old.evicted = true
			} else {
				drop = append(drop, old.st)
			}
		}
		e = prev
	}
	c.mu.Unlock()
	for _, st := range drop {
		_ = st.Close()
	}
	return cs, nil
}

// runsWithContext reports whether st runs under a context (modernc's do).
func runsWithContext(st driver.Stmt) bool {
	_, e := st.(driver.StmtExecContext)
	_, q := st.(driver.StmtQueryContext)
	return e && q
}

// release marks cs free again (closing it if it was evicted meanwhile).
func (c *cachedConn) release(cs *cachedStmt) {
	c.mu.Lock()
	cs.busy = false
	evicted := cs.evicted
	c.mu.Unlock()
	if evicted {
		_ = cs.st.Close()
	}
}

func (c *cachedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	cs, err := c.acquire(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.base.ExecContext(ctx, query, args)
	}
	defer c.release(cs)
	return cs.st.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *cachedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	cs, err := c.acquire(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.base.QueryContext(ctx, query, args)
	}
	rows, err := cs.st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		c.release(cs)
		return nil, err
	}
	return &cachedRows{Rows: rows, release: func() { c.release(cs) }}, nil
}

// PrepareContext returns the cached statement of query for the caller to
// hold until it closes it (the group commit prepares its INSERT once per
// group); held, it is busy: other calls of the text run uncached meanwhile.
func (c *cachedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	cs, err := c.acquire(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.base.PrepareContext(ctx, query)
	}
	return &heldStmt{Stmt: cs.st, release: func() { c.release(cs) }}, nil
}

// heldStmt is a cached statement a caller prepared: closing it gives it
// back to the cache.
type heldStmt struct {
	driver.Stmt
	release func()
	once    sync.Once
}

func (s *heldStmt) Close() error {
	s.once.Do(s.release)
	return nil
}

func (s *heldStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *heldStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}

// Close closes the cached statements, then the connection.
func (c *cachedConn) Close() error {
	c.mu.Lock()
	var sts []driver.Stmt
	for e := c.lru.Front(); e != nil; e = e.Next() {
		sts = append(sts, e.Value.(*cachedStmt).st)
	}
	c.lru.Init()
	c.byKey = map[string]*list.Element{}
	c.mu.Unlock()
	for _, st := range sts {
		_ = st.Close()
	}
	return c.base.Close()
}

// The engine connection's optional interfaces database/sql looks for.

func (c *cachedConn) Ping(ctx context.Context) error {
	if p, ok := c.base.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *cachedConn) ResetSession(ctx context.Context) error {
	if r, ok := c.base.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *cachedConn) IsValid() bool {
	if v, ok := c.base.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// cachedRows releases its statement when closed.
type cachedRows struct {
	driver.Rows
	release func()
	once    sync.Once
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.once.Do(r.release)
	return err
}

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *cachedRows) ColumnTypeLength(i int) (int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeLength); ok {
		return t.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *cachedRows) ColumnTypeNullable(i int) (bool, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *cachedRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypePrecisionScale); ok {
		return t.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeOf(new(any)).Elem()
}
