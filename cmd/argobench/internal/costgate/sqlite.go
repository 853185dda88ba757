package costgate

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"

	"github.com/argo-retry/argo/runtime"
)

// OpenSQLite opens the SQLite database of dsn ("sqlite:PATH") with the
// connection settings of runtime.OpenDB (runtime/store.go), through a
// driver wrapper that counts into c. Use it as runtime.Config.DB with
// Dialect "sqlite".
func OpenSQLite(dsn string, c *Counter) (*sql.DB, error) {
	plain, _, err := runtime.OpenDB(dsn)
	if err != nil {
		return nil, err
	}
	drv := plain.Driver()
	plain.Close()
	path := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//")
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	name := "file:" + path + sep + "_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"
	db := sql.OpenDB(&liteConnector{d: drv, name: name, c: c})
	db.SetMaxOpenConns(8)
	return db, nil
}

type liteConnector struct {
	d    driver.Driver
	name string
	c    *Counter
}

func (l *liteConnector) Connect(ctx context.Context) (driver.Conn, error) {
	var bc driver.Conn
	var err error
	if dc, ok := l.d.(driver.DriverContext); ok {
		var cn driver.Connector
		if cn, err = dc.OpenConnector(l.name); err != nil {
			return nil, err
		}
		bc, err = cn.Connect(ctx)
	} else {
		bc, err = l.d.Open(l.name)
	}
	if err != nil {
		return nil, err
	}
	return &liteConn{Conn: bc, s: &session{c: l.c}}, nil
}

func (l *liteConnector) Driver() driver.Driver { return l.d }

type liteConn struct {
	driver.Conn
	s *session
}

func (w *liteConn) count(query string) {
	w.s.trip()
	w.s.statement(query)
}

func (w *liteConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var st driver.Stmt
	var err error
	if p, ok := w.Conn.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, query)
	} else {
		st, err = w.Conn.Prepare(query)
	}
	if err != nil {
		return nil, err
	}
	return &liteStmt{Stmt: st, w: w, query: query}, nil
}

func (w *liteConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var tx driver.Tx
	var err error
	if b, ok := w.Conn.(driver.ConnBeginTx); ok {
		tx, err = b.BeginTx(ctx, opts)
	} else {
		tx, err = w.Conn.Begin() //nolint:staticcheck // fallback for old drivers
	}
	w.count("BEGIN")
	if err != nil {
		return nil, err
	}
	return &liteTx{Tx: tx, w: w}, nil
}

func (w *liteConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := w.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	res, err := e.ExecContext(ctx, query, args)
	if errors.Is(err, driver.ErrSkip) {
		return nil, err
	}
	w.count(query)
	return res, err
}

func (w *liteConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := w.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	rows, err := q.QueryContext(ctx, query, args)
	if errors.Is(err, driver.ErrSkip) {
		return nil, err
	}
	w.count(query)
	return rows, err
}

func (w *liteConn) ResetSession(ctx context.Context) error {
	if r, ok := w.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (w *liteConn) IsValid() bool {
	if v, ok := w.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (w *liteConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := w.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

type liteStmt struct {
	driver.Stmt
	w     *liteConn
	query string
}

func (s *liteStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	defer s.w.count(s.query)
	if e, ok := s.Stmt.(driver.StmtExecContext); ok {
		return e.ExecContext(ctx, args)
	}
	vals := make([]driver.Value, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	return s.Stmt.Exec(vals) //nolint:staticcheck // fallback for old drivers
}

func (s *liteStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	defer s.w.count(s.query)
	if q, ok := s.Stmt.(driver.StmtQueryContext); ok {
		return q.QueryContext(ctx, args)
	}
	vals := make([]driver.Value, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	return s.Stmt.Query(vals) //nolint:staticcheck // fallback for old drivers
}

func (s *liteStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

type liteTx struct {
	driver.Tx
	w *liteConn
}

func (t *liteTx) Commit() error {
	err := t.Tx.Commit()
	t.w.count("COMMIT")
	return err
}

func (t *liteTx) Rollback() error {
	err := t.Tx.Rollback()
	t.w.count("ROLLBACK")
	return err
}
