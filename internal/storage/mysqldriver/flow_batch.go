package mysqldriver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/argo-retry/argo/internal/storage"
)

// The batched gated claim (storage/flow_batched.go) on the one-trip pool:
// each batch is one multi-statement query on a connection held for the
// claim's transaction.

var _ storage.FlowBatcher = (*Driver)(nil)

// BeginFlowBatch holds a connection of the one-trip pool for one batched
// gated claim; ok is false without the pool, which includes a Galera node
// (galera.go: there the batched claim lost updates, two claims of one group
// on two nodes both committing the take of the same task, about one run
// in three of TestFlowRateWindowsAcrossInstances/galera; the gated claim
// there takes the ordinary path).
func (d *Driver) BeginFlowBatch(ctx context.Context) (storage.FlowBatch, bool, error) {
	db := d.onetripDB(ctx)
	if db == nil {
		return nil, false, nil
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, false, err
	}
	return &flowBatch{conn: conn}, true, nil
}

// flowBatch is one batched gated claim's connection.
type flowBatch struct {
	conn *sql.Conn
	// open: a transaction may be open on conn (from the first batch on,
	// until COMMIT or ROLLBACK succeeded).
	open bool
	// broken: a batch failed half-way; the connection is discarded, which
	// rolls its transaction back.
	broken bool
}

// joined is qs as one multi-statement query, after prefix, and the
// arguments in order.
func joined(prefix string, qs []storage.FlowQuery) (string, []any) {
	parts := []string{}
	if prefix != "" {
		parts = append(parts, prefix)
	}
	var args []any
	for _, q := range qs {
		parts = append(parts, q.SQL)
		args = append(args, q.Args...)
	}
	return strings.Join(parts, "; "), args
}

// Read starts the transaction and runs qs in one round trip (see
// storage.FlowBatch).
func (b *flowBatch) Read(ctx context.Context, qs []storage.FlowQuery, dests []any) error {
	if len(qs) != len(dests) {
		return fmt.Errorf("argo: batched read of %d statements into %d destinations", len(qs), len(dests))
	}
	query, args := joined("SET TRANSACTION ISOLATION LEVEL "+rowwiseIsolation+"; START TRANSACTION", qs)
	b.open = true
	rows, err := b.conn.QueryContext(ctx, query, args...)
	if err != nil {
		b.broken = true
		return err
	}
	defer rows.Close()
	// The driver skips the results without columns (SET, START
	// TRANSACTION): rows starts at qs[0]'s.
	for i, dest := range dests {
		if i > 0 && !rows.NextResultSet() {
			b.broken = true
			if err := rows.Err(); err != nil {
				return err
			}
			return fmt.Errorf("argo: batched read: %d result sets for %d statements", i, len(qs))
		}
		if err := sqlx.StructScan(rows, dest); err != nil {
			b.broken = true
			return err
		}
	}
	if err := rows.Err(); err != nil {
		b.broken = true
		return err
	}
	return nil
}

// Exec runs qs in one round trip and returns the rows each changed.
func (b *flowBatch) Exec(ctx context.Context, qs []storage.FlowQuery) ([]int64, error) {
	query, args := joined("", qs)
	named, err := namedArgs(query, args)
	if err != nil {
		return nil, err
	}
	var affected []int64
	err = b.conn.Raw(func(dc any) (err error) {
		affected, err = execOnDriverConn(ctx, dc, query, named)
		return err
	})
	if err != nil {
		b.broken = true
	}
	return affected, err
}

// Commit commits the transaction.
func (b *flowBatch) Commit(ctx context.Context) error {
	if _, err := b.conn.ExecContext(ctx, "COMMIT"); err != nil {
		b.broken = true
		return err
	}
	b.open = false
	return nil
}

// Close rolls back what is still open and releases the connection; a
// connection whose batch failed half-way, or whose ROLLBACK failed, is
// discarded (closing it rolls back).
func (b *flowBatch) Close() {
	if b.open && !b.broken {
		if _, err := b.conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			b.broken = true
		}
	}
	if b.broken {
		_ = b.conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	_ = b.conn.Close()
}
