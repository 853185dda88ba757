package failover

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/go-sql-driver/mysql"
)

// fullConn is every interface of the driver's connection that conn passes
// on.
type fullConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.NamedValueChecker
	driver.SessionResetter
	driver.Validator
}

// conn is a driver connection to one server of a Connector. It reports
// itself bad (IsValid, ResetSession) once its server is no longer the one
// in use or is marked unusable, so that database/sql drops it instead of
// pooling it; the driver's own IsValid and ResetSession (a connection that
// saw a network error, a dead socket) are asked as well.
type conn struct {
	inner  fullConn
	server *server
	owner  *Connector
	causal bool // the session's wsrep_sync_wait includes causalSyncWait
}

var _ fullConn = (*conn)(nil)

// Unwrap returns the driver's own connection.
func (c *conn) Unwrap() driver.Conn { return c.inner }

// observe looks at the error of a call on the connection: a server that
// refuses work (a Galera node outside the primary component, a server
// shutting down) is marked unusable, so that every connection to it leaves
// the pool and new ones go elsewhere; a server that says it is read-only
// is checked at once. It returns err.
func (c *conn) observe(err error) error {
	switch classify(err) {
	case serverUnusable:
		c.owner.markUnusable(c.server, err, "")
		c.owner.askRecheck()
	case serverSuspect:
		c.owner.askRecheck()
	}
	return err
}

// errorKind is what an error says of the connection's server.
type errorKind int

const (
	statementError errorKind = iota // the statement's own, or the connection's (the driver discards a broken one)
	serverUnusable                  // the server refuses work: use another
	serverSuspect                   // the server may have become read-only: check it now
)

// MySQL error numbers that say something of the server, not the statement.
const (
	erUnknownCommand = 1047 // a Galera node not ready or outside the primary component: "WSREP has not yet prepared node for application use"
	erServerShutdown = 1053 // server shutdown in progress
	erOptionPrevents = 1290 // e.g. "running with the --read-only option"
	erReadOnlyMode   = 1836 // MySQL: "running in read-only mode"
)

func classify(err error) errorKind {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return statementError
	}
	switch me.Number {
	case erUnknownCommand, erServerShutdown:
		return serverUnusable
	case erOptionPrevents, erReadOnlyMode:
		return serverSuspect
	}
	return statementError
}

// usable reports whether the connection may be handed out again.
func (c *conn) usable() bool {
	return c.owner.inUse(c.server)
}

func (c *conn) IsValid() bool { return c.usable() && c.inner.IsValid() }

func (c *conn) ResetSession(ctx context.Context) error {
	if !c.usable() {
		return driver.ErrBadConn
	}
	if err := c.observe(c.inner.ResetSession(ctx)); err != nil {
		return err
	}
	return c.syncCausal(ctx)
}

// causalSyncWait is the wsrep_sync_wait a Galera session reads with while
// the writer is new (Connector.causalNow): 1 (SELECT, SHOW, BEGIN) + 2
// (UPDATE, DELETE) + 4 (INSERT, REPLACE): every statement that reads rows
// to decide a write first waits until the node has applied every write the
// cluster had certified when it began, so it decides on what the old writer
// committed too.
const causalSyncWait = "7"

// syncCausal sets the session's wsrep_sync_wait on a Galera node as
// causalNow says (ORed into the server's global value; DEFAULT, the
// global value, otherwise), when it is not so already.
func (c *conn) syncCausal(ctx context.Context) error {
	if !c.server.isGalera() {
		return nil
	}
	want := c.owner.causalNow()
	if want == c.causal {
		return nil
	}
	query := "SET SESSION wsrep_sync_wait = DEFAULT"
	if want {
		query = "SET SESSION wsrep_sync_wait = @@GLOBAL.wsrep_sync_wait | " + causalSyncWait
	}
	if _, err := c.inner.ExecContext(ctx, query, nil); err != nil {
		return c.observe(err)
	}
	c.causal = want
	return nil
}

func (c *conn) Close() error { return c.inner.Close() }

func (c *conn) Ping(ctx context.Context) error { return c.observe(c.inner.Ping(ctx)) }

func (c *conn) CheckNamedValue(nv *driver.NamedValue) error { return c.inner.CheckNamedValue(nv) }

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := c.inner.ExecContext(ctx, query, args)
	return res, c.observe(err)
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.inner.QueryContext(ctx, query, args)
	return rows, c.observe(err)
}

func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.inner.BeginTx(ctx, opts)
	if err != nil {
		return nil, c.observe(err)
	}
	return &connTx{inner: tx, conn: c}, nil
}

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.inner.PrepareContext(ctx, query)
	if err != nil {
		return nil, c.observe(err)
	}
	return &connStmt{inner: st, conn: c}, nil
}

// connTx is a transaction whose commit and rollback errors are observed.
type connTx struct {
	inner driver.Tx
	conn  *conn
}

func (t *connTx) Commit() error   { return t.conn.observe(t.inner.Commit()) }
func (t *connTx) Rollback() error { return t.conn.observe(t.inner.Rollback()) }

// connStmt is a prepared statement whose errors are observed; it passes on
// the driver statement's optional interfaces.
type connStmt struct {
	inner driver.Stmt
	conn  *conn
}

var (
	_ driver.StmtExecContext   = (*connStmt)(nil)
	_ driver.StmtQueryContext  = (*connStmt)(nil)
	_ driver.NamedValueChecker = (*connStmt)(nil)
	_ driver.ColumnConverter   = (*connStmt)(nil)
)

func (s *connStmt) Close() error  { return s.inner.Close() }
func (s *connStmt) NumInput() int { return s.inner.NumInput() }

func (s *connStmt) Exec(args []driver.Value) (driver.Result, error) {
	res, err := s.inner.Exec(args)
	return res, s.conn.observe(err)
}

func (s *connStmt) Query(args []driver.Value) (driver.Rows, error) {
	rows, err := s.inner.Query(args)
	return rows, s.conn.observe(err)
}

func (s *connStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if ex, ok := s.inner.(driver.StmtExecContext); ok {
		res, err := ex.ExecContext(ctx, args)
		return res, s.conn.observe(err)
	}
	values, err := plainValues(args)
	if err != nil {
		return nil, err
	}
	return s.Exec(values)
}

func (s *connStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if q, ok := s.inner.(driver.StmtQueryContext); ok {
		rows, err := q.QueryContext(ctx, args)
		return rows, s.conn.observe(err)
	}
	values, err := plainValues(args)
	if err != nil {
		return nil, err
	}
	return s.Query(values)
}

// plainValues converts named arguments for a statement without context
// methods (which takes no names).
func plainValues(args []driver.NamedValue) ([]driver.Value, error) {
	values := make([]driver.Value, len(args))
	for i, a := range args {
		if a.Name != "" {
			return nil, errors.New("failover: the driver's statement takes no named arguments")
		}
		values[i] = a.Value
	}
	return values, nil
}

func (s *connStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := s.inner.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func (s *connStmt) ColumnConverter(idx int) driver.ValueConverter {
	if cc, ok := s.inner.(driver.ColumnConverter); ok {
		return cc.ColumnConverter(idx)
	}
	return driver.DefaultParameterConverter
}
