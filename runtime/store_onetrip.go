package runtime

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/argo-retry/argo/internal/failover"
)

// A finish is a fenced UPDATE of the task row plus, unless the attempt
// succeeded (the task row records that one), its attempt-history row, in
// one transaction. A lone success is therefore one autocommit UPDATE. A
// batch of finishes (or a lone failure) sent statement by statement would be
// two round trips per task plus BEGIN and COMMIT; on MySQL argo sends the
// whole batch as one multi-statement query instead:
//
//	START TRANSACTION;
//	INSERT INTO argo_task_attempt … SELECT … FROM argo_task WHERE <fence 1>;
//	UPDATE argo_task … WHERE <fence 1>;
//	UPDATE argo_task … WHERE <fence 2>;   (a success: no history row)
//	…
//	COMMIT
//
// Multi-statement queries need the driver's multiStatements option, which
// argo sets only on a small pool of its own (onetripDB), never on the handle
// it shares with the application. The pool exists when the handle came from
// OpenDB (its settings are known); otherwise such finishes take the
// transaction path, which is correct, only slower. It exists only where
// client-side interpolation is safe (dsn_charset.go): a multi-statement
// query in a charset such as GBK lets an argument run as SQL.

// onetripDB returns the store's multi-statement pool, opening it on first
// use; nil unless the store is on a MySQL handle from OpenDB.
func (s *store) onetripDB() *sql.DB {
	s.onetripOnce.Do(func() {
		if s.dialect == DialectMySQL && !s.noOnetrip {
			s.onetrip = openOnetrip(s.db.DB)
		}
	})
	return s.onetrip
}

func openOnetrip(db *sql.DB) *sql.DB {
	h := mysqlHandleOf(db)
	if h == nil || h.unsafeCharset != "" || !h.cfg.InterpolateParams {
		return nil
	}
	mc := h.cfg.Clone()
	mc.MultiStatements = true
	conn, err := failover.NewConnector(mc, failover.Options{})
	if err != nil {
		return nil
	}
	multi := sql.OpenDB(redactingConnector{Connector: conn, password: mc.Passwd})
	multi.SetMaxOpenConns(16)
	multi.SetMaxIdleConns(16)
	return multi
}

// finishAsIs applies f if the lease still holds, and records its attempt row in
// the same transaction (one round trip on MySQL with the onetrip pool). It
// returns ErrLeaseLost if the lease was taken over, and then writes nothing.
// (finish adds the degrade of a write refused for its data.)
func (s *store) finishAsIs(ctx context.Context, f finishing, now Millis) error {
	if err := CheckTransition(f.id, f.from, f.to); err != nil {
		return err
	}
	if f.historyRow() == nil {
		q, args := s.finishUpdate(f, now)
		n, err := s.exec(ctx, q, args...)
		if err == nil && n == 0 {
			err = ErrLeaseLost
		}
		return err
	}
	errs, err := s.finishBatchAsIs(ctx, []finishing{f}, now)
	if err != nil {
		return err
	}
	return errs[0]
}

// finishBatchOnetrip is finishBatch in one round trip (MySQL, onetrip pool):
// each fenced UPDATE is preceded by its history row's INSERT … SELECT … FROM
// argo_task WHERE <the same fence>, so a row is written only for a finish
// whose fence holds (the INSERT share-locks the task row, so it cannot
// change before the UPDATE), and the UPDATEs' row counts say which held.
//
// (Not INSERT … WHERE ROW_COUNT() = 1 after the UPDATE: when the client dies
// while the query runs, MariaDB may commit the UPDATE with the INSERT
// skipped, a success or failure with no history; the kill -9 test caught it.)
func (s *store) finishBatchOnetrip(ctx context.Context, fs []finishing, now Millis) ([]error, error) {
	errs := make([]error, len(fs))
	var b strings.Builder
	var args []any
	b.WriteString("START TRANSACTION")
	stmt := make([]int, len(fs)) // index of f's UPDATE among the statements; 0 for none
	n := 1
	for i, f := range fs {
		if errs[i] = CheckTransition(f.id, f.from, f.to); errs[i] != nil {
			continue
		}
		if a := f.historyRow(); a != nil {
			// Written only if the fence holds, judged on the row itself (and
			// share-locked until the UPDATE below).
			b.WriteString("; INSERT INTO argo_task_attempt (task_pk, attempt, kind, worker, started_at, finished_at, outcome, error_msg, backoff_ms) " +
				"SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? FROM argo_task WHERE id = ? AND shard_key = ? AND task_status = ? AND lease_owner = ? AND execute_times = ?")
			args = append(args, a.TaskPK, a.Attempt, a.Kind, a.Worker, a.StartedAt, a.FinishedAt, a.Outcome, sanitizeErrorText(a.Error), a.BackoffMs, f.id, f.shard, f.from, f.owner, f.attempt)
			n++
		}
		q, qargs := s.finishUpdate(f, now)
		b.WriteString("; ")
		b.WriteString(q)
		args = append(args, qargs...)
		stmt[i] = n
		n++
	}
	if n == 1 {
		return errs, nil // every finish refused by the state machine
	}
	b.WriteString("; COMMIT")
	n++
	for try := 1; ; try++ {
		affected, err := s.execMulti(ctx, b.String(), args)
		if err == nil {
			if len(affected) != n {
				return nil, fmt.Errorf("argo: finish of %d tasks: %d results from a %d-statement query", len(fs), len(affected), n)
			}
			for i := range fs {
				if stmt[i] > 0 && affected[stmt[i]] == 0 {
					errs[i] = ErrLeaseLost
				}
			}
			return errs, nil
		}
		if try == 5 || !isRetryableLockError(err) {
			return nil, err
		}
	}
}

// onRawConn runs fn on a driver connection of the onetrip pool with the
// arguments converted for the driver. If fn fails the connection is
// discarded rather than returned to the pool: a multi-statement query that
// failed half-way may have left its transaction open, and closing the
// connection is what rolls it back.
func (s *store) onRawConn(ctx context.Context, query string, args []any, fn func(dc any, named []driver.NamedValue) error) error {
	named, err := namedArgs(query, args)
	if err != nil {
		return err
	}
	conn, err := s.onetrip.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var fnErr error
	_ = conn.Raw(func(dc any) error {
		if fnErr = fn(dc, named); fnErr != nil {
			return driver.ErrBadConn // close this connection
		}
		return nil
	})
	return fnErr
}

func namedArgs(query string, args []any) ([]driver.NamedValue, error) {
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return nil, fmt.Errorf("argo: argument %d of %q: %w", i+1, strings.SplitN(query, ";", 2)[0], err)
		}
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return named, nil
}

// execMulti runs a multi-statement query on the onetrip pool and returns
// the rows each statement affected.
func (s *store) execMulti(ctx context.Context, query string, args []any) ([]int64, error) {
	var affected []int64
	err := s.onRawConn(ctx, query, args, func(dc any, named []driver.NamedValue) error {
		ex, ok := dc.(driver.ExecerContext)
		if !ok {
			return errors.New("argo: the MySQL driver connection cannot Exec")
		}
		res, err := ex.ExecContext(ctx, query, named)
		if err != nil {
			return err
		}
		mr, ok := res.(mysql.Result)
		if !ok {
			return errors.New("argo: the MySQL driver returned no per-statement results")
		}
		affected = mr.AllRowsAffected()
		return nil
	})
	return affected, err
}
