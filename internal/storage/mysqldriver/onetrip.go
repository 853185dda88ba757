package mysqldriver

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
)

// A finish is a fenced UPDATE of the task row plus, unless the attempt
// succeeded (the task row records that one), its attempt-history row, in
// one transaction. A lone success is therefore one autocommit UPDATE. A
// batch of finishes (or a lone failure) sent statement by statement would be
// two round trips per task plus BEGIN and COMMIT; on MySQL argo sends the
// whole batch as one multi-statement query instead:
//
//	START TRANSACTION;
//	INSERT INTO argo_task_attempt … SELECT … FROM argo_task WHERE <Fence 1>;
//	UPDATE argo_task … WHERE <Fence 1>;
//	UPDATE argo_task … WHERE <Fence 2>;   (a success: no history row)
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

// maxLockTries bounds the runs of a one-trip query the server rolled back
// for a lock conflict.
const maxLockTries = 5

// FinishBatchOneTrip is Store.FinishBatch in one round trip (the one-trip pool):
// each fenced UPDATE is preceded by its history row's INSERT … SELECT … FROM
// argo_task WHERE <the same fence>, so a row is written only for a finish
// whose Fence holds (the INSERT share-locks the task row, so it cannot
// change before the UPDATE), and the UPDATEs' row counts say which held.
//
// (Not INSERT … WHERE ROW_COUNT() = 1 after the UPDATE: when the client dies
// while the query runs, MariaDB may commit the UPDATE with the INSERT
// skipped, a success or failure with no history; the kill -9 test caught it.)
func (d *Driver) FinishBatchOneTrip(ctx context.Context, fs []storage.Finishing, now storage.Millis) ([]error, bool, error) {
	if d.onetripDB(ctx) == nil {
		return nil, false, nil
	}
	errs, err := d.finishBatchOnetrip(ctx, fs, now)
	return errs, true, err
}

func (d *Driver) finishBatchOnetrip(ctx context.Context, fs []storage.Finishing, now storage.Millis) ([]error, error) {
	errs := make([]error, len(fs))
	var b strings.Builder
	var args []any
	b.WriteString("START TRANSACTION")
	stmt := make([]int, len(fs)) // index of f's UPDATE among the statements; 0 for none
	n := 1
	for i, f := range fs {
		if errs[i] = argotype.CheckTransition(f.ID, f.From, f.To); errs[i] != nil {
			continue
		}
		if a := f.HistoryRow(); a != nil {
			// Written only if the Fence holds, judged on the row itself (and
			// share-locked until the UPDATE below).
			b.WriteString("; " + InsertAttemptIfFenced)
			if f.SkipsDependencies() {
				b.WriteString(storage.NoDownstreamGuard)
			}
			args = append(append(args, storage.AttemptArgs(a)...), f.ID, f.Shard, f.From, f.Owner, f.Attempt)
			n++
		}
		q, qargs := storage.FinishStatement(statements, f, now)
		b.WriteString("; ")
		b.WriteString(q)
		args = append(args, qargs...)
		stmt[i] = n
		n++
		// The downstream tasks settle in the same transaction (each step
		// judged on the row as it now is: harmless if the fence failed).
		// None for a task read without downstream tasks: its fence then
		// requires has_downstream = 0 too (storage/finish_downstream.go).
		for _, step := range storage.FinishSteps(statements, f, now) {
			b.WriteString("; " + step.Query)
			args = append(args, step.Args...)
			n++
		}
	}
	if n == 1 {
		return errs, nil // every finish refused by the state machine
	}
	b.WriteString("; COMMIT")
	n++
	for try := 1; ; try++ {
		affected, err := d.execMulti(ctx, b.String(), args)
		if err == nil {
			if len(affected) != n {
				return nil, fmt.Errorf("argo: finish of %d tasks: %d results from a %d-statement query", len(fs), len(affected), n)
			}
			for i := range fs {
				if stmt[i] > 0 && affected[stmt[i]] == 0 {
					errs[i] = storage.ErrLeaseLost
				}
			}
			return errs, nil
		}
		if try == maxLockTries || !d.IsRetryableLockError(err) {
			return nil, err
		}
	}
}

// onRawConn runs fn on a driver connection of the onetrip pool with the
// arguments converted for the driver. If fn fails the connection is
// discarded rather than returned to the pool: a multi-statement query that
// failed half-way may have left its transaction open, and closing the
// connection is what rolls it back.
func (d *Driver) onRawConn(ctx context.Context, query string, args []any, fn func(dc any, named []driver.NamedValue) error) error {
	named, err := namedArgs(query, args)
	if err != nil {
		return err
	}
	conn, err := d.onetrip.Conn(ctx)
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
func (d *Driver) execMulti(ctx context.Context, query string, args []any) ([]int64, error) {
	var affected []int64
	err := d.onRawConn(ctx, query, args, func(dc any, named []driver.NamedValue) (err error) {
		affected, err = execOnDriverConn(ctx, dc, query, named)
		return err
	})
	return affected, err
}

// execOnDriverConn runs a multi-statement query on dc, a connection of the
// MySQL driver, and returns the rows each statement affected.
func execOnDriverConn(ctx context.Context, dc any, query string, named []driver.NamedValue) ([]int64, error) {
	ex, ok := dc.(driver.ExecerContext)
	if !ok {
		return nil, errors.New("argo: the MySQL driver connection cannot Exec")
	}
	res, err := ex.ExecContext(ctx, query, named)
	if err != nil {
		return nil, err
	}
	mr, ok := res.(mysql.Result)
	if !ok {
		return nil, errors.New("argo: the MySQL driver returned no per-statement results")
	}
	return mr.AllRowsAffected(), nil
}
