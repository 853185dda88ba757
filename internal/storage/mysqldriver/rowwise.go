package mysqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/argo-retry/argo/internal/storage"
)

// ExecRowwise runs one fenced single-row UPDATE (query, a statement by
// primary key) once per element of rows, all in one READ COMMITTED
// transaction, and reports for each whether its statement changed a row:
// exactly the rows this call took, whatever ran at the same time. On MySQL
// with the onetrip pool it is one round trip:
//
//	SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
//	START TRANSACTION;
//	UPDATE argo_task FORCE INDEX (PRIMARY) … WHERE id = ? AND <fence>;   (one per row)
//	COMMIT
//
// and statement by statement in a transaction otherwise. An UPDATE by
// primary key at READ COMMITTED locks the one row it changes (no gap or
// next-key lock), so it never blocks an INSERT. Callers pass rows in
// ascending id order, so that two such calls lock shared rows in the same
// order and do not deadlock each other. A deadlock or lock-wait timeout
// rolls the whole transaction back and it is run again, up to 5 times.
func (d *Driver) ExecRowwise(ctx context.Context, conn storage.Conn, query string, rows [][]any) ([]bool, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	if d.onetripDB(ctx) != nil {
		return d.execRowwiseOnetrip(ctx, query, rows)
	}
	changed := make([]bool, len(rows))
	err := conn.Write(ctx, sql.LevelReadCommitted, func(tx *sqlx.Tx) error {
		for i, args := range rows {
			res, err := tx.ExecContext(ctx, query, args...)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			changed[i] = n == 1
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}

// execRowwiseOnetrip is execRowwise in one multi-statement query; the
// driver reports each statement's affected rows.
func (d *Driver) execRowwiseOnetrip(ctx context.Context, query string, rows [][]any) ([]bool, error) {
	const head = 2 // SET TRANSACTION, START TRANSACTION
	var b strings.Builder
	b.WriteString("SET TRANSACTION ISOLATION LEVEL " + rowwiseIsolation + "; START TRANSACTION")
	var args []any
	for _, r := range rows {
		b.WriteString("; ")
		b.WriteString(query)
		args = append(args, r...)
	}
	b.WriteString("; COMMIT")
	want := head + len(rows) + 1
	for try := 1; ; try++ {
		affected, err := d.execMulti(ctx, b.String(), args)
		if err == nil {
			if len(affected) != want {
				return nil, fmt.Errorf("argo: %d single-row updates: %d results from a %d-statement query", len(rows), len(affected), want)
			}
			changed := make([]bool, len(rows))
			for i := range rows {
				changed[i] = affected[head+i] == 1
			}
			return changed, nil
		}
		if try == maxLockTries || !d.IsRetryableLockError(err) {
			return nil, err
		}
	}
}
