// Package sqlcount wraps a database/sql driver to count what a workload asks
// of the database: statements by verb and table, prepares, transactions, and
// the time spent in each. argobench uses it to show how many statements (and,
// on MySQL, network round trips) one durable call costs next to the same work
// written by hand.
package sqlcount

import (
	"context"
	"database/sql/driver"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"
)

// Counts is what a Counter saw, keyed by operation: "BEGIN", "COMMIT",
// "ROLLBACK", "PREPARE", or a statement's verb and table ("INSERT argo_task",
// "UPDATE argo_task", "SELECT argo_task", …).
type Counts struct {
	N    map[string]int64
	Time map[string]time.Duration
}

// Keys returns the operations seen, sorted.
func (c Counts) Keys() []string {
	ks := make([]string, 0, len(c.N))
	for k := range c.N {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Sub returns c minus before.
func (c Counts) Sub(before Counts) Counts {
	out := Counts{N: map[string]int64{}, Time: map[string]time.Duration{}}
	for k, v := range c.N {
		if d := v - before.N[k]; d != 0 {
			out.N[k] = d
			out.Time[k] = c.Time[k] - before.Time[k]
		}
	}
	return out
}

// Counter accumulates Counts; it is safe for concurrent use.
type Counter struct {
	mu      sync.Mutex
	n       map[string]int64
	t       map[string]time.Duration
	capture map[string]*Statement // marker → first statement containing it (nil: none yet)
}

// Statement is a statement as the driver received it: its text, with its
// placeholders, and its arguments.
type Statement struct {
	Query string
	Args  []driver.Value
}

// NewCounter returns an empty Counter.
func NewCounter() *Counter {
	return &Counter{n: map[string]int64{}, t: map[string]time.Duration{}, capture: map[string]*Statement{}}
}

// Snapshot returns a copy of the counts so far.
func (c *Counter) Snapshot() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Counts{N: make(map[string]int64, len(c.n)), Time: make(map[string]time.Duration, len(c.t))}
	for k, v := range c.n {
		out.N[k] = v
		out.Time[k] = c.t[k]
	}
	return out
}

// Capture asks the counter to remember the next statement whose text
// contains marker, with its arguments; Captured returns it.
func (c *Counter) Capture(marker string) {
	c.mu.Lock()
	if _, ok := c.capture[marker]; !ok {
		c.capture[marker] = nil
	}
	c.mu.Unlock()
}

// Captured returns the statement captured for marker, or nil if none was
// seen (or Capture was not called for marker).
func (c *Counter) Captured(marker string) *Statement {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.capture[marker]
}

func (c *Counter) add(key string, d time.Duration) {
	c.mu.Lock()
	c.n[key]++
	c.t[key] += d
	c.mu.Unlock()
}

// observe counts one event of a wrapped connection (Connector).
func (c *Counter) observe(e Event) {
	if e.Kind != KindStatement {
		c.add(string(e.Kind), e.Took)
		return
	}
	c.mu.Lock()
	k := Classify(e.Query)
	c.n[k]++
	c.t[k] += e.Took
	for m, st := range c.capture {
		if st == nil && strings.Contains(e.Query, m) {
			vals := make([]driver.Value, len(e.Args))
			for i, a := range e.Args {
				vals[i] = a.Value
			}
			c.capture[m] = &Statement{Query: e.Query, Args: vals}
		}
	}
	c.mu.Unlock()
}

// Classify names a statement by its verb and first table.
func Classify(query string) string {
	f := strings.Fields(query)
	if len(f) == 0 {
		return "?"
	}
	verb := strings.ToUpper(f[0])
	table := ""
	after := map[string]string{"INSERT": "INTO", "SELECT": "FROM", "DELETE": "FROM"}
	switch verb {
	case "UPDATE":
		if len(f) > 1 {
			table = f[1]
		}
	case "INSERT", "SELECT", "DELETE":
		for i, w := range f {
			if strings.EqualFold(w, after[verb]) && i+1 < len(f) {
				table = strings.TrimRight(f[i+1], "(,;")
				break
			}
		}
	default:
		return verb
	}
	if table == "" {
		return verb
	}
	return verb + " " + table
}

// Connector wraps base so that every connection counts into c.
func Connector(base driver.Connector, c *Counter) driver.Connector {
	return Observe(base, func() func(Event) { return c.observe })
}

// EventKind is what a wrapped connection did.
type EventKind string

// The kinds of Event.
const (
	KindStatement EventKind = ""         // a statement ran (Query, Args)
	KindPrepare   EventKind = "PREPARE"  // a statement was prepared (Query); its runs are statements
	KindBegin     EventKind = "BEGIN"    // a transaction began
	KindCommit    EventKind = "COMMIT"   // a transaction was committed
	KindRollback  EventKind = "ROLLBACK" // a transaction was rolled back
)

// Event is one request a wrapped connection made of its driver, reported
// once the driver answered (also when it failed; not when it answered
// driver.ErrSkip, for database/sql then asks again another way).
type Event struct {
	Kind  EventKind
	Query string              // the statement's text (KindStatement, KindPrepare)
	Args  []driver.NamedValue // the statement's arguments (KindStatement)
	Took  time.Duration       // how long the driver took
	Err   error               // what the driver returned
}

// Observe wraps base so that each connection it opens reports every
// request to the function that open returns for that connection (called
// once per connection, as it opens: per-connection state, such as whether
// a transaction is open, lives in its closure). The function is called on
// the goroutine using the connection; database/sql uses one connection
// from one goroutine at a time. Connector is Observe with a Counter.
func Observe(base driver.Connector, open func() func(Event)) driver.Connector {
	return &connector{base: base, open: open}
}

// DSNConnector makes a Connector of a driver that has no OpenConnector.
func DSNConnector(d driver.Driver, dsn string) driver.Connector {
	if dc, ok := d.(driver.DriverContext); ok {
		if cn, err := dc.OpenConnector(dsn); err == nil {
			return cn
		}
	}
	return dsnConnector{d: d, dsn: dsn}
}

type dsnConnector struct {
	d   driver.Driver
	dsn string
}

func (d dsnConnector) Connect(context.Context) (driver.Conn, error) { return d.d.Open(d.dsn) }
func (d dsnConnector) Driver() driver.Driver                        { return d.d }

type connector struct {
	base driver.Connector
	open func() func(Event)
}

func (cn *connector) Connect(ctx context.Context) (driver.Conn, error) {
	bc, err := cn.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{Conn: bc, see: cn.open()}, nil
}

func (cn *connector) Driver() driver.Driver { return cn.base.Driver() }

type conn struct {
	driver.Conn
	see func(Event)
}

func (w *conn) Prepare(query string) (driver.Stmt, error) {
	return w.PrepareContext(context.Background(), query)
}

func (w *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	start := time.Now()
	var st driver.Stmt
	var err error
	if p, ok := w.Conn.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, query)
	} else {
		st, err = w.Conn.Prepare(query)
	}
	w.see(Event{Kind: KindPrepare, Query: query, Took: time.Since(start), Err: err})
	if err != nil {
		return nil, err
	}
	return &stmt{Stmt: st, see: w.see, query: query}, nil
}

func (w *conn) Begin() (driver.Tx, error) {
	return w.BeginTx(context.Background(), driver.TxOptions{})
}

func (w *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	start := time.Now()
	var tx driver.Tx
	var err error
	if b, ok := w.Conn.(driver.ConnBeginTx); ok {
		tx, err = b.BeginTx(ctx, opts)
	} else {
		tx, err = w.Conn.Begin() //nolint:staticcheck // fallback for old drivers
	}
	w.see(Event{Kind: KindBegin, Took: time.Since(start), Err: err})
	if err != nil {
		return nil, err
	}
	return &txw{Tx: tx, see: w.see}, nil
}

func (w *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := w.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	start := time.Now()
	res, err := e.ExecContext(ctx, query, args)
	if errors.Is(err, driver.ErrSkip) {
		return nil, err // database/sql prepares instead; the stmt counts it
	}
	w.see(Event{Query: query, Args: args, Took: time.Since(start), Err: err})
	return res, err
}

func (w *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := w.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	start := time.Now()
	rows, err := q.QueryContext(ctx, query, args)
	if errors.Is(err, driver.ErrSkip) {
		return nil, err
	}
	w.see(Event{Query: query, Args: args, Took: time.Since(start), Err: err})
	return rows, err
}

func (w *conn) Ping(ctx context.Context) error {
	if p, ok := w.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (w *conn) ResetSession(ctx context.Context) error {
	if r, ok := w.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (w *conn) IsValid() bool {
	if v, ok := w.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (w *conn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := w.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

type stmt struct {
	driver.Stmt
	see   func(Event)
	query string
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	start := time.Now()
	var res driver.Result
	var err error
	if e, ok := s.Stmt.(driver.StmtExecContext); ok {
		res, err = e.ExecContext(ctx, args)
	} else {
		vals := make([]driver.Value, len(args))
		for i, a := range args {
			vals[i] = a.Value
		}
		res, err = s.Stmt.Exec(vals) //nolint:staticcheck // fallback for old drivers
	}
	s.see(Event{Query: s.query, Args: args, Took: time.Since(start), Err: err})
	return res, err
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	start := time.Now()
	var rows driver.Rows
	var err error
	if q, ok := s.Stmt.(driver.StmtQueryContext); ok {
		rows, err = q.QueryContext(ctx, args)
	} else {
		vals := make([]driver.Value, len(args))
		for i, a := range args {
			vals[i] = a.Value
		}
		rows, err = s.Stmt.Query(vals) //nolint:staticcheck // fallback for old drivers
	}
	s.see(Event{Query: s.query, Args: args, Took: time.Since(start), Err: err})
	return rows, err
}

func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

type txw struct {
	driver.Tx
	see func(Event)
}

func (t *txw) Commit() error {
	start := time.Now()
	err := t.Tx.Commit()
	t.see(Event{Kind: KindCommit, Took: time.Since(start), Err: err})
	return err
}

func (t *txw) Rollback() error {
	start := time.Now()
	err := t.Tx.Rollback()
	t.see(Event{Kind: KindRollback, Took: time.Since(start), Err: err})
	return err
}
