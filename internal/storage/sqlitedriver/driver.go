// Package sqlitedriver is argo's storage driver for SQLite, the embedded
// default: every statement argo runs there (statements.go), its claim (one
// UPDATE … RETURNING), the process write lock that queues this process's
// writers to one file, and how SQLite's errors read (errors.go). It
// registers itself as "sqlite".
package sqlitedriver

import (
	"context"
	"database/sql"
	"os"
	"sync"

	"github.com/jmoiron/sqlx"
	_ "modernc.org/sqlite" // the engine

	"github.com/argo-retry/argo/internal/storage"
)

// Name is the dialect this driver registers under.
const Name = "sqlite"

func init() {
	storage.Register(Name, func(db *sql.DB, opts storage.Options) storage.Driver { return New(opts.WriteLock) })
}

// Driver is SQLite's storage.Driver.
type Driver struct {
	writeMu *sync.Mutex
}

// New returns the driver. writeLock is the write lock of the database file,
// shared by every handle on it in this process (nil: a lock of this
// driver's own).
func New(writeLock *sync.Mutex) *Driver {
	if writeLock == nil {
		writeLock = &sync.Mutex{}
	}
	return &Driver{writeMu: writeLock}
}

// Name returns "sqlite".
func (d *Driver) Name() string { return Name }

// SQL returns the SQLite statements.
func (d *Driver) SQL() *storage.Statements { return statements }

// WriteLock is the file's write lock: this process's writers queue on it
// instead of sleeping in SQLite's busy handler. (Every write transaction
// is BEGIN IMMEDIATE: the DSN sets _txlock=immediate.)
func (d *Driver) WriteLock() *sync.Mutex { return d.writeMu }

// TxOptions returns nil: SQLite's transactions are serializable.
func (d *Driver) TxOptions(sql.IsolationLevel) *sql.TxOptions { return nil }

// Claim leases the due rows in scope with one UPDATE … RETURNING in a
// write transaction; RETURNING gives the rows as claimed, in no order.
// They are claimed only if the transaction commits: RETURNING gives them
// before the COMMIT, which can still fail (the context ended, the file
// busy) and roll them back, so a failed claim returns none of them.
func (d *Driver) Claim(ctx context.Context, conn storage.Conn, c storage.ClaimRequest) ([]*storage.Task, error) {
	args := append([]any{c.Owner, c.LeaseUntil, c.Now, c.DueBy, c.Now}, c.ScopeArgs...)
	args = append(args, c.Limit)
	var tasks []*storage.Task
	err := conn.Write(ctx, sql.LevelDefault, func(tx *sqlx.Tx) error {
		tasks = nil
		return tx.SelectContext(ctx, &tasks, Claim(c.Scope), args...)
	})
	if err != nil {
		return nil, err
	}
	return tasks, nil
}

// ExecRowwise runs query once per row in one write transaction (which
// excludes every other writer: no row-lock order to keep).
func (d *Driver) ExecRowwise(ctx context.Context, conn storage.Conn, query string, rows [][]any) ([]bool, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	changed := make([]bool, len(rows))
	err := conn.Write(ctx, sql.LevelDefault, func(tx *sqlx.Tx) error {
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

// FinishBatchOneTrip returns ok false: an embedded database has no round
// trips to save.
func (d *Driver) FinishBatchOneTrip(context.Context, []storage.Finishing, storage.Millis) ([]error, bool, error) {
	return nil, false, nil
}

// DisableOneTrip does nothing: there is no one-trip path.
func (d *Driver) DisableOneTrip() {}

// OneTripInUse returns false.
func (d *Driver) OneTripInUse() bool { return false }

// Close does nothing: the driver opens nothing of its own.
func (d *Driver) Close() {}

// HoldsNoTable reports whether the SQLite database of db has no table at
// all (a file that opening it created and nothing wrote to); path is the
// file, judged by its size when the database cannot be read.
func HoldsNoTable(db *sql.DB, path string) bool {
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM sqlite_master").Scan(&n); err != nil {
		fi, serr := os.Stat(path)
		return serr == nil && fi.Size() == 0
	}
	return n == 0
}
