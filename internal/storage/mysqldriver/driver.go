// Package mysqldriver is argo's storage driver for the MySQL family
// (MySQL, MariaDB, Galera and other servers speaking its protocol): every
// statement argo runs there (statements.go), the claim that takes only the
// rows it claims (claim.go), the one-trip path that sends a batch of
// writes as one multi-statement query (onetrip.go, rowwise.go), and how
// the server's errors read (errors.go). It registers itself as "mysql".
package mysqldriver

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// Name is the dialect this driver registers under.
const Name = "mysql"

func init() {
	storage.Register(Name, func(db *sql.DB, opts storage.Options) storage.Driver { return New(opts.OpenMultiStatement) })
}

// Driver is the MySQL family's storage.Driver.
type Driver struct {
	// openMulti opens the multi-statement pool of the one-trip path (nil:
	// none): a small pool of its own, never the handle shared with the
	// application, where multiStatements is off.
	openMulti func() *sql.DB
	onetrip   *sql.DB
	once      sync.Once
	noOnetrip bool
	galera    galeraProbe // no one-trip path on Galera (galera.go)
}

// New returns the driver; openMulti opens the one-trip path's
// multi-statement pool on first use (nil, or returning nil: none, and
// every batch takes a transaction).
func New(openMulti func() *sql.DB) *Driver { return &Driver{openMulti: openMulti} }

// Name returns "mysql".
func (d *Driver) Name() string { return Name }

// SQL returns the MySQL statements.
func (d *Driver) SQL() *storage.Statements { return statements }

// WriteLock returns nil: the server queues writers on row locks.
func (d *Driver) WriteLock() *sync.Mutex { return nil }

// TxOptions sets the isolation level when one is asked for.
func (d *Driver) TxOptions(iso sql.IsolationLevel) *sql.TxOptions {
	if iso == sql.LevelDefault {
		return nil
	}
	return &sql.TxOptions{Isolation: iso}
}

// DisableOneTrip makes every batch take a transaction.
func (d *Driver) DisableOneTrip() { d.noOnetrip = true }

// OneTripInUse reports whether the multi-statement pool is open and used
// (not on a Galera node; a probe that fails, bounded by oneTripProbeBound,
// reports false).
func (d *Driver) OneTripInUse() bool {
	ctx, cancel := context.WithTimeout(context.Background(), oneTripProbeBound)
	defer cancel()
	return d.onetripDB(ctx) != nil
}

// oneTripProbeBound bounds OneTripInUse's question to the server.
const oneTripProbeBound = 10 * time.Second

// onetripDB returns the multi-statement pool, opening it on first use; nil
// when there is none, and on a Galera node, where a multi-statement
// transaction is not atomic (galera.go). A probe that fails returns nil
// (the transaction path, correct everywhere) and asks again next time.
func (d *Driver) onetripDB(ctx context.Context) *sql.DB {
	d.once.Do(func() {
		if !d.noOnetrip && d.openMulti != nil {
			d.onetrip = d.openMulti()
		}
	})
	if d.onetrip == nil {
		return nil
	}
	if galera, err := d.galera.onGalera(ctx, d.onetrip); err != nil || galera {
		return nil
	}
	return d.onetrip
}

// Close closes the multi-statement pool, if open; none opens after.
func (d *Driver) Close() {
	d.once.Do(func() {})
	if d.onetrip != nil {
		d.onetrip.Close()
	}
}
