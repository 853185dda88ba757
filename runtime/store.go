package runtime

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-sql-driver/mysql"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/failover"
	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/storage/mysqldriver"
	"github.com/argo-retry/argo/internal/storage/sqlitedriver"
	_ "modernc.org/sqlite" // the embedded default database
)

// Dialect names for Config.Dialect and OpenDB.
const (
	DialectMySQL  = mysqldriver.Name
	DialectSQLite = sqlitedriver.Name
)

// sqliteWriteLocks maps each *sql.DB opened by OpenDB on a SQLite file to
// the write mutex of that file (shared by every handle on the same path).
var (
	sqliteWriteLocks sync.Map // *sql.DB → *sync.Mutex
	sqlitePathLocks  sync.Map // absolute path → *sync.Mutex
)

// OpenDB opens the database a DSN names ("sqlite:PATH" or
// "mysql:USER:PASS@tcp(HOST:PORT)/DB") with the settings argo needs, and
// returns the handle and its dialect. Use it to share one handle between
// your own transactions and Config.DB.
//
// On SQLite each connection keeps up to 256 prepared statements, keyed by
// their text, and runs them again without parsing them (a handle opened
// with database/sql's "sqlite" driver parses every statement on each call:
// it works, at about 1.5 times the CPU per task).
//
// On MySQL, arguments are interpolated client-side (one round trip per
// statement) when the connection charset is utf8mb4 (the default), utf8,
// utf8mb3, latin1, ascii or binary; with any other (gbk, big5, sjis, …)
// they are sent as server-side prepared statements, and a DSN that sets
// interpolateParams=true or multiStatements=true there is refused
// (dsn_charset.go). Errors never show the DSN's password (RedactDSN).
// A MySQL DSN may name several servers, tcp(HOST1:PORT,HOST2:PORT): the
// handle then fails over between them (internal/failover, docs/mysql.md).
func OpenDB(dsn string) (*sql.DB, string, error) {
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//")
		if path == "" {
			return nil, "", fmt.Errorf(`argo: DSN %q names no file: write "sqlite:argo.db" or "sqlite:/var/lib/app/argo.db"`, dsn)
		}
		if file := sqliteFile(dsn); file != "" {
			if err := checkSQLiteDir(dsn, file); err != nil {
				return nil, "", err
			}
		}
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		// Its connections reuse their prepared statements (sqlitedriver.StmtCacheSize).
		db := sqlitedriver.Open("file:" + path + sep + "_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
		db.SetMaxOpenConns(8)
		key := path
		if abs, err := filepath.Abs(path); err == nil {
			key = abs
		}
		mu, _ := sqlitePathLocks.LoadOrStore(key, &sync.Mutex{})
		sqliteWriteLocks.Store(db, mu)
		return db, DialectSQLite, nil
	case strings.HasPrefix(dsn, "mysql:"):
		raw := strings.TrimPrefix(strings.TrimPrefix(dsn, "mysql:"), "//")
		mc, err := mysql.ParseDSN(raw)
		if err != nil {
			return nil, "", fmt.Errorf(`argo: DSN %q is not a MySQL DSN (%s): write "mysql:user:password@tcp(host:3306)/dbname"`, RedactDSN(dsn), describeDSNError(err))
		}
		if _, why := redactMySQLDSN(raw); why != "" {
			// The driver's split is ambiguous: part of a password could be
			// taken for the address or the database (and quoted in errors).
			return nil, "", fmt.Errorf(`argo: DSN %q cannot be split with certainty (%s): write "mysql:user:password@tcp(host:3306)/dbname", with any '@' in the database name or a parameter value written %%40`, RedactDSN(dsn), why)
		}
		if mc.DBName == "" {
			return nil, "", fmt.Errorf(`argo: DSN %q names no database: write "mysql:user:password@tcp(host:3306)/dbname"`, RedactDSN(dsn))
		}
		if err := failover.ParseServerList(mc, raw); err != nil { // several servers: tcp(host1:3306,host2:3306)
			return nil, "", fmt.Errorf("argo: DSN %q: %w", RedactDSN(dsn), err)
		}
		fopts, err := failoverOptions(mc)
		if err != nil {
			return nil, "", fmt.Errorf("argo: DSN %q: %s", RedactDSN(dsn), err)
		}
		idle, err := applyIdleTimeout(mc) // dsn_idle_timeout.go
		if err != nil {
			return nil, "", fmt.Errorf("argo: DSN %q: %s", RedactDSN(dsn), err)
		}
		_, params, _ := strings.Cut(raw[strings.LastIndex(raw, "/")+1:], "?")
		h := &mysqlHandle{cfg: mc, failoverOpts: fopts, unsafeCharset: unsafeConnectionCharset(mc, params)}
		if h.unsafeCharset == "" {
			// Arguments are interpolated client-side (safe in this charset,
			// dsn_charset.go): one round trip per statement instead of
			// prepare, execute and close. The charset is set by SET NAMES,
			// which a server cannot override as it can the handshake's.
			mc.InterpolateParams = true
			if err := pinConnectionCharset(mc, params); err != nil {
				return nil, "", fmt.Errorf("argo: DSN %q: %s", RedactDSN(dsn), describeDSNError(err))
			}
		} else if mc.InterpolateParams || mc.MultiStatements {
			return nil, "", fmt.Errorf(`argo: DSN %q: %s; argo will not run with interpolateParams=true or multiStatements=true there: remove them, or use charset=utf8mb4`, RedactDSN(dsn), h.unsafeCharset)
		}
		conn, err := failover.NewConnector(mc, fopts) // the driver's own for one server
		if err != nil {
			return nil, "", fmt.Errorf("argo: DSN %q: %s", RedactDSN(dsn), describeDSNError(err))
		}
		h.addFailover(conn)
		db := sql.OpenDB(redactingConnector{Connector: conn, password: mc.Passwd})
		db.SetMaxOpenConns(64)
		db.SetMaxIdleConns(64)
		closeIdleBefore(db, idle)
		mysqlHandles.Store(db, h)
		return db, DialectMySQL, nil
	}
	return nil, "", fmt.Errorf(`argo: DSN %q: want "sqlite:PATH" (embedded default) or "mysql:user:password@tcp(host:3306)/dbname"`, RedactDSN(dsn))
}

// The engines argo runs on: each driver registers itself with storage.
var _ = []storage.Driver{(*mysqldriver.Driver)(nil), (*sqlitedriver.Driver)(nil)}

// newStore is the storage.Store over db with what OpenDB recorded about
// the handle: the write lock of its SQLite file, the settings of its MySQL
// connection (for the one-trip pool).
func newStore(db *sql.DB, dialect string) *storage.Store {
	// Every Store on one handle shares its write lock (the SQLite driver
	// queues this process's writers on it; the MySQL driver takes none).
	mu, _ := sqliteWriteLocks.LoadOrStore(db, &sync.Mutex{})
	return storage.New(db, dialect, storage.Options{
		WriteLock:          mu.(*sync.Mutex),
		OpenMultiStatement: func() *sql.DB { return openOnetrip(db) },
	})
}

// SchemaError says the argo tables are missing or out of date, and what to
// apply (argotype.SchemaError documents its fields).
type SchemaError = argotype.SchemaError

// Migrate applies the embedded migrations of the dialect that are not yet
// recorded in argo_schema_migrations, and returns the files it recorded
// (MigrateSteps tells those applied by hand before apart). It is idempotent
// and safe to run from several processes at once (every statement is IF NOT
// EXISTS, or an ADD COLUMN whose "already exists" error means another
// process applied it).
func Migrate(ctx context.Context, db *sql.DB, dialect string) ([]string, error) {
	return storage.Migrate(ctx, db, dialect)
}

// MigrationStep is one file Migrate recorded in argo_schema_migrations
// (argotype.MigrationStep documents its fields).
type MigrationStep = argotype.MigrationStep

// MigrateSteps is Migrate, saying for each file whether it was applied by
// hand before (see MigrationStep).
func MigrateSteps(ctx context.Context, db *sql.DB, dialect string) ([]MigrationStep, error) {
	return storage.MigrateSteps(ctx, db, dialect)
}
