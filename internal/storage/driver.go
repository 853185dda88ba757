package storage

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/jmoiron/sqlx"
)

// Driver is one database engine: every statement argo runs on it (SQL) and
// the traits the Store's engine-independent logic asks about (how its errors
// read, how its writers queue, how it claims). Each engine is a package of
// its own (internal/storage/mysqldriver, internal/storage/sqlitedriver) that
// registers its Driver under its dialect name (Register); the Store never
// tests the dialect itself.
//
// A third engine is a third package: a Statements value holding each
// statement in its own SQL, the error classification of its client library,
// its claim, and a directory of migrations under sql/<Name>/.
//
// A driver may also offer optional capabilities, found by type assertion:
// FlowBatcher (flow_batched.go) sends the gated claim's transaction in
// batches of statements.
type Driver interface {
	// Name is the dialect name: "mysql", "sqlite". It names the engine's
	// migrations directory in the sql package and appears in SchemaError.
	Name() string

	// SQL returns every statement the Store runs on this engine. Every field
	// is set (TestStatementsComplete in each driver checks it).
	SQL() *Statements

	// Claim leases up to c.Limit due tasks that c.Scope selects, and returns
	// them as claimed (state running or falling_back, leased by c.Owner
	// until c.LeaseUntil), in any order. It takes exactly the rows it
	// returns: a row another claimer took meanwhile is not returned, and a
	// row of a transaction that did not commit is not returned either.
	// Rows come beside an error only with a *ClaimUnknownError, as the
	// rows taken for certain (the Store runs them).
	Claim(ctx context.Context, conn Conn, c ClaimRequest) ([]*Task, error)

	// ExecRowwise runs query (a fenced single-row UPDATE by primary key)
	// once per element of rows, in one transaction at READ COMMITTED (where
	// the engine has isolation levels), and reports for each whether it
	// changed a row. Callers pass rows in ascending id order.
	ExecRowwise(ctx context.Context, conn Conn, query string, rows [][]any) ([]bool, error)

	// FinishBatchOneTrip applies fs (each a fenced UPDATE plus its history
	// row, see Store.FinishBatch) in one round trip, if the engine can: ok
	// is false when it cannot (the Store then runs them in a transaction).
	// errs[i] is fs[i]'s own outcome (ErrLeaseLost, a TransitionError, nil);
	// err a failure of the whole batch, which then wrote nothing.
	FinishBatchOneTrip(ctx context.Context, fs []Finishing, now Millis) (errs []error, ok bool, err error)

	// WriteLock is the lock every writer of this process takes before it
	// writes (SQLite: one writer per file at a time; queueing on a mutex
	// beats sleeping in the engine's busy handler), or nil for none.
	WriteLock() *sync.Mutex

	// TxOptions are the options of a write transaction at iso (nil: the
	// engine's default; an engine without isolation levels returns nil).
	TxOptions(iso sql.IsolationLevel) *sql.TxOptions

	// IsRetryableLockError reports a refusal after which the engine rolled
	// the whole transaction back because of concurrent locking (deadlock,
	// lock wait timeout): running it again is right.
	IsRetryableLockError(err error) bool
	// IsSubmitLockError is IsRetryableLockError for a submit's INSERT, which
	// also retries the engine's other rollbacks caused by concurrency
	// (certification failures, a busy database).
	IsSubmitLockError(err error) bool
	// IsDataError reports a statement refused for the data it carries (a
	// text too long, a character the column's charset lacks, NULL in NOT
	// NULL): running it again as is fails the same way.
	IsDataError(err error) bool
	// IsDuplicate reports a unique-key violation.
	IsDuplicate(err error) bool
	// IsDuplicateColumn reports an ADD COLUMN of a column that exists, or
	// an index added (ADD KEY) that exists.
	IsDuplicateColumn(err error) bool
	// IsLastingRefusal reports a refusal the same statement meets every
	// time (data, rights, schema): not lock conflicts, not the server's
	// passing states, not a failure to connect.
	IsLastingRefusal(err error) bool
	// OutcomeKnown reports whether a failed write certainly changed nothing
	// (the engine refused it, or no connection could be opened to send it).
	OutcomeKnown(err error) bool
	// DescribeLockRefusal explains a lock refusal of an INSERT written into
	// the caller's transaction (what happened to that transaction), or
	// returns err as it is.
	DescribeLockRefusal(err error) error
	// GrantError explains a refusal for lack of a privilege: which one, and
	// the GRANT that gives what argo needs, for migrating (file names the
	// migration being applied) or for the runtime (file ""). It returns nil
	// for any other error, and on engines without privileges.
	GrantError(db *sql.DB, err error, file string) error

	// DisableOneTrip makes every write take the transaction path (tests
	// compare both paths); OneTripInUse reports whether the one-round-trip
	// path is open and used, opening it if needed. Engines without one
	// ignore the first and return false.
	DisableOneTrip()
	OneTripInUse() bool

	// Close releases what the driver opened itself (never the shared handle).
	Close()
}

// Conn is what a driver's operations run on: the Store's handle, and its
// write path (the driver's WriteLock, transactions run again on a
// retryable lock error).
type Conn interface {
	// DB is the shared handle.
	DB() *sqlx.DB
	// Exec runs one write statement in autocommit under the write lock and
	// returns the rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Write runs fn in a transaction at iso, under the write lock, again
	// (up to 5 times) when the engine rolled it back for a lock conflict.
	Write(ctx context.Context, iso sql.IsolationLevel, fn func(tx *sqlx.Tx) error) error
}

// ClaimRequest is one claim (Driver.Claim).
type ClaimRequest struct {
	Owner string
	// Now is the claim's time: a row is claimable when its lease_until is
	// Now or earlier. DueBy bounds execute_time (Now, or earlier for a
	// claim of overdue rows only).
	Now, DueBy, LeaseUntil Millis
	Limit                  int
	// Scope is a condition on task_id and shard_key (the names and shards
	// this instance claims), with ScopeArgs for its placeholders.
	Scope     string
	ScopeArgs []any
}

// The states of each set the statements name, built into their text with
// StateSet.
var (
	// ClaimableStates may be claimed once due: pending, retrying (a retry
	// due), exhausted (its fallback due).
	ClaimableStates = []State{StatePending, StateRetrying, StateExhausted}
	// LeasedStates hold a lease: running, falling_back.
	LeasedStates = []State{StateRunning, StateFallingBack}
	// WaitingStates wait for their due time to run: pending, retrying.
	WaitingStates = []State{StatePending, StateRetrying}
	// PurgeableStates are final and deleted after the retention age:
	// succeeded, recovered, discarded, skipped.
	PurgeableStates = []State{StateSucceeded, StateRecovered, StateDiscarded, StateSkipped}
	// FinishedStates are final and counted by Stats: succeeded, recovered, dead.
	FinishedStates = []State{StateSucceeded, StateRecovered, StateDead}
	// RequeueableStates may be requeued by an operator: dead, discarded.
	RequeueableStates = []State{StateDead, StateDiscarded}
	// DiscardableStates may be discarded by an operator: pending, retrying,
	// exhausted, dead, blocked (its downstream tasks are then skipped).
	DiscardableStates = []State{StatePending, StateRetrying, StateExhausted, StateDead, StateBlocked}
)

// StateSet renders states as an SQL list of their stored values, "(0, 2, 4)",
// for statement text: a set named after the constants, never bare numbers.
func StateSet(states ...State) string {
	parts := make([]string, len(states))
	for i, s := range states {
		parts[i] = fmt.Sprint(int(s))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// StateValue renders one state's stored value for statement text.
func StateValue(s State) string { return fmt.Sprint(int(s)) }

// Placeholders renders n placeholders as an SQL list: "(?, ?, ?)".
func Placeholders(n int) string {
	return "(" + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + ")"
}

// An Opener makes a Driver for a handle of its engine.
type Opener func(db *sql.DB, opts Options) Driver

var (
	driversMu sync.RWMutex
	drivers   = map[string]Opener{}
	// classifiers holds one driver of each engine, on no handle, for the
	// package-level error classifiers.
	classifiers []Driver
)

// Register makes an engine's driver available under its dialect name. Each
// driver package calls it from init; a program gets the engines whose
// packages it imports (runtime imports both).
func Register(dialect string, open Opener) {
	driversMu.Lock()
	defer driversMu.Unlock()
	if _, dup := drivers[dialect]; dup {
		panic("argo: storage driver " + dialect + " registered twice")
	}
	drivers[dialect] = open
	classifiers = append(classifiers, open(nil, Options{}))
}

// openDriver is the one place a dialect name is looked at: it picks the
// driver registered under it.
func openDriver(db *sql.DB, dialect string, opts Options) (Driver, error) {
	driversMu.RLock()
	open, ok := drivers[dialect]
	driversMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("argo: dialect %q unknown: want one of %s", dialect, strings.Join(Dialects(), ", "))
	}
	return open(db, opts), nil
}

// Dialects lists the registered dialect names, sorted.
func Dialects() []string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	var out []string
	for name := range drivers {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// eachDriver reports whether pred holds for the driver of any registered
// engine: the package-level error classifiers (OutcomeKnown, IsDuplicate…)
// ask every engine, each of which recognises only its own errors.
func eachDriver(pred func(Driver) bool) bool {
	driversMu.RLock()
	defer driversMu.RUnlock()
	for _, d := range classifiers {
		if pred(d) {
			return true
		}
	}
	return false
}

// StatementsFor returns the statements of the driver registered under
// dialect (tools that run argo's statements themselves, as argobench's
// hand-written side, take them from here rather than keep copies).
func StatementsFor(dialect string) (*Statements, error) {
	d, err := openDriver(nil, dialect, Options{})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.SQL(), nil
}
