// Package storage is what argo does with a database, independent of the
// engine: the task lifecycle's writes (inserts with submit tokens, claims,
// fenced finishes, lease renewal and rescue, held retries, purge), the
// instances and leader rows, the database clock, the operators' queries,
// schema checks and migrations; and the rules around them: transactions run
// again on lock errors, writes whose outcome is unknown resolved with submit
// tokens, writes refused for their data degraded, error texts sanitised
// before they are written, state sets built from the argotype constants.
//
// Every statement and every engine trait comes from a Driver (driver.go),
// one package per engine: internal/storage/mysqldriver (MySQL, MariaDB,
// Galera) and internal/storage/sqlitedriver. The runtime holds a *Store and
// never writes SQL itself.
package storage

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"

	"github.com/jmoiron/sqlx"
)

// Store is every operation argo runs on its tables, over one handle and
// the Driver of its engine.
type Store struct {
	db  *sqlx.DB
	d   Driver
	sql *Statements
	// log receives the ERROR of a write refused for its data (degrade.go);
	// slog.Default() when nil.
	log *slog.Logger
	// group groups concurrent submits (group_commit.go); nil: each submit
	// writes its own row.
	group *groupCommit
	// flowMembers: each flow group's members as last read (flow_batched.go).
	flowMembers flowMembers
	// packet: the server's packet limit as last read (packet.go).
	packet packetLimit
	// unclaimed: rows of claims whose outcome was unknown, to be given
	// back (claim_unknown.go).
	unclaimed unclaimedRows
}

// Options are what a Store needs beyond the handle. The zero value is valid.
type Options struct {
	// WriteLock serialises this process's writes to a SQLite file; every
	// handle on the same file must share it. nil: a lock of this Store's
	// own. Engines without a process write lock ignore it.
	WriteLock *sync.Mutex
	// OpenMultiStatement opens, on first use, a small pool on the same MySQL
	// database with multi-statement queries on (the one-trip path: a batch
	// of finishes or claims in one round trip). nil, or returning nil: every
	// write takes the transaction path, which is correct, only slower.
	// Engines without a one-trip path ignore it.
	OpenMultiStatement func() *sql.DB
	// Logger receives the ERROR of a write refused for its data; nil:
	// slog.Default().
	Logger *slog.Logger
}

// New returns the Store over db, an open handle of the dialect (a
// registered driver's name: "mysql", "sqlite"). Close releases what it
// opened itself, not db. An unknown dialect is a programming error: New
// panics, saying which dialects there are (Known tells beforehand).
func New(db *sql.DB, dialect string, opts Options) *Store {
	d, err := openDriver(db, dialect, opts)
	if err != nil {
		panic(err.Error())
	}
	return NewWithDriver(db, d, opts)
}

// NewWithDriver returns the Store over db with the given driver.
func NewWithDriver(db *sql.DB, d Driver, opts Options) *Store {
	s := &Store{db: sqlx.NewDb(db, d.Name()), d: d, sql: d.SQL(), log: opts.Logger}
	s.group = newGroupCommit(s)
	return s
}

// Known reports whether a driver is registered under dialect.
func Known(dialect string) bool {
	driversMu.RLock()
	defer driversMu.RUnlock()
	_, ok := drivers[dialect]
	return ok
}

// DB returns the handle the Store runs on.
func (s *Store) DB() *sql.DB { return s.db.DB }

// Dialect returns the name of the Store's engine ("mysql", "sqlite").
func (s *Store) Dialect() string { return s.d.Name() }

// Driver returns the Store's driver.
func (s *Store) Driver() Driver { return s.d }

// DisableOnetrip makes every write take the transaction path (tests compare
// both paths). Call it before the first write.
func (s *Store) DisableOnetrip() { s.d.DisableOneTrip() }

// OnetripInUse reports whether the one-trip path (MySQL's multi-statement
// pool) is open and used, opening it if needed.
func (s *Store) OnetripInUse() bool { return s.d.OneTripInUse() }

// Close releases what the Store opened itself (not the shared handle).
func (s *Store) Close() { s.d.Close() }

// SetLogger sets where the ERROR of a write refused for its data goes (nil:
// slog.Default()). Call it before the Store is used.
func (s *Store) SetLogger(l *slog.Logger) { s.log = l }

// conn is the Store's write path as a driver sees it (Conn).
type conn struct{ s *Store }

func (c conn) DB() *sqlx.DB { return c.s.db }
func (c conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return c.s.exec(ctx, query, args...)
}
func (c conn) Write(ctx context.Context, iso sql.IsolationLevel, fn func(tx *sqlx.Tx) error) error {
	return c.s.writeIso(ctx, iso, fn)
}

// write runs fn in a transaction at the engine's default isolation.
func (s *Store) write(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	return s.writeIso(ctx, sql.LevelDefault, fn)
}

// maxLockTries bounds the runs of a transaction the engine rolled back for
// a lock conflict (deadlock, lock wait timeout).
const maxLockTries = 5

// writeIso runs fn in a transaction at the given isolation level (where the
// engine has levels). A lock conflict rolls back everything fn did, so fn
// is run again, up to maxLockTries times: everything fn decides must be
// decided inside fn, from what it reads in that try (a value computed by an
// earlier try, or set on a caller's struct by it, is stale: reset it first).
func (s *Store) writeIso(ctx context.Context, iso sql.IsolationLevel, fn func(tx *sqlx.Tx) error) error {
	opts := s.d.TxOptions(iso)
	for try := 1; ; try++ {
		err := s.tryWrite(ctx, opts, try, fn)
		if err == nil || try == maxLockTries || !s.d.IsRetryableLockError(err) {
			return err
		}
	}
}

func (s *Store) tryWrite(ctx context.Context, opts *sql.TxOptions, try int, fn func(tx *sqlx.Tx) error) error {
	hook := txHookOf(ctx) // tests only (txhook.go)
	if hook != nil {
		if err := hook(ctx, try, TryBegin); err != nil {
			return err
		}
	}
	if mu := s.d.WriteLock(); mu != nil {
		mu.Lock()
		defer mu.Unlock()
	}
	tx, err := s.db.BeginTxx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if hook != nil {
		if err := hook(ctx, try, TryCommit); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// exec runs one write statement in autocommit, under the engine's write
// lock. (On SQLite a single write statement takes the file's write lock
// when it starts, so it waits on busy_timeout rather than failing; the
// driver's WriteLock queues this process's writers first.)
func (s *Store) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := s.execResult(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s *Store) execResult(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if mu := s.d.WriteLock(); mu != nil {
		mu.Lock()
		defer mu.Unlock()
	}
	return s.db.ExecContext(ctx, query, args...)
}

// CheckSchema fails with the file to apply when the schema is missing or
// old: the earliest migration one of whose probes fails (the drivers add
// the probes of some areas in init, not in migration order).
func (s *Store) CheckSchema(ctx context.Context) error {
	var first *SchemaError
	for _, p := range s.sql.SchemaProbes {
		rows, err := s.db.QueryContext(ctx, p.Query)
		if err != nil {
			if first == nil || p.Migration < first.Migration {
				first = &SchemaError{Dialect: s.d.Name(), Migration: p.Migration, Err: err}
			}
			continue
		}
		rows.Close()
	}
	if first != nil {
		return first
	}
	return nil
}

// GrantError says which grant the runtime lacked at start, and the GRANT it
// needs (not a SchemaError: the tables may well be there); any other error
// is returned as it is.
func (s *Store) GrantError(err error) error {
	if gerr := s.d.GrantError(s.db.DB, err, ""); gerr != nil {
		return gerr
	}
	return err
}
