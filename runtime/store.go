package runtime

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	_ "modernc.org/sqlite" // the embedded default database

	"github.com/argo-retry/argo/internal/failover"
	argosql "github.com/argo-retry/argo/sql"
)

// Dialect names for Config.Dialect and OpenDB.
const (
	DialectMySQL  = "mysql"
	DialectSQLite = "sqlite"
)

// store is every statement argo runs. Both databases take the same SQL
// (with ? placeholders) except the claim, which is the dialect's own.
// On SQLite every write runs in a BEGIN IMMEDIATE transaction (the DSN sets
// _txlock=immediate), so concurrent writers queue on busy_timeout instead of
// failing with SQLITE_BUSY.
type store struct {
	db      *sqlx.DB
	dialect string
	// writeMu serialises this process's writes to one SQLite file, so its
	// writers queue on a mutex instead of sleeping in SQLite's busy handler.
	// nil on MySQL.
	writeMu *sync.Mutex
	// onetrip is a small MySQL pool with multi-statement queries on, for a
	// lone finish in one round trip (store_onetrip.go), opened on first use;
	// nil when unavailable.
	onetrip     *sql.DB
	onetripOnce sync.Once
	noOnetrip   bool // tests: take the transaction path
	// log receives the ERROR of a write refused for its data (store_degrade.go);
	// slog.Default() when nil.
	log *slog.Logger
}

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
		db, err := sql.Open("sqlite", "file:"+path+sep+"_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
		if err != nil {
			return nil, "", fmt.Errorf("argo: open %s: %w", dsn, err)
		}
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
		_, params, _ := strings.Cut(raw[strings.LastIndex(raw, "/")+1:], "?")
		h := &mysqlHandle{cfg: mc, unsafeCharset: unsafeConnectionCharset(mc, params)}
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
		conn, err := failover.NewConnector(mc, failover.Options{}) // the driver's own for one server
		if err != nil {
			return nil, "", fmt.Errorf("argo: DSN %q: %s", RedactDSN(dsn), describeDSNError(err))
		}
		db := sql.OpenDB(redactingConnector{Connector: conn, password: mc.Passwd})
		db.SetMaxOpenConns(64)
		db.SetMaxIdleConns(64)
		mysqlHandles.Store(db, h)
		return db, DialectMySQL, nil
	}
	return nil, "", fmt.Errorf(`argo: DSN %q: want "sqlite:PATH" (embedded default) or "mysql:user:password@tcp(host:3306)/dbname"`, RedactDSN(dsn))
}

func newStore(db *sql.DB, dialect string) *store {
	s := &store{db: sqlx.NewDb(db, dialect), dialect: dialect}
	if dialect == DialectSQLite {
		mu, _ := sqliteWriteLocks.LoadOrStore(db, &sync.Mutex{})
		s.writeMu = mu.(*sync.Mutex)
	}
	return s
}

// close releases what the store opened itself (not the shared handle).
func (s *store) close() {
	s.onetripOnce.Do(func() {}) // no pool opens after close
	if s.onetrip != nil {
		s.onetrip.Close()
	}
}

// write runs fn in a transaction (BEGIN IMMEDIATE on SQLite).
func (s *store) write(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	return s.writeIso(ctx, sql.LevelDefault, fn)
}

// writeIso runs fn in a transaction at the given isolation level (MySQL
// only; SQLite is always serializable). A MySQL deadlock or lock-wait
// timeout rolls back everything fn did, so fn is run again, up to 5 times.
func (s *store) writeIso(ctx context.Context, iso sql.IsolationLevel, fn func(tx *sqlx.Tx) error) error {
	var opts *sql.TxOptions
	if s.dialect == DialectMySQL && iso != sql.LevelDefault {
		opts = &sql.TxOptions{Isolation: iso}
	}
	for try := 1; ; try++ {
		err := s.tryWrite(ctx, opts, fn)
		if err == nil || try == 5 || !isRetryableLockError(err) {
			return err
		}
	}
}

func (s *store) tryWrite(ctx context.Context, opts *sql.TxOptions, fn func(tx *sqlx.Tx) error) error {
	if s.writeMu != nil {
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
	}
	tx, err := s.db.BeginTxx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// isRetryableLockError reports a MySQL deadlock (1213) or lock-wait timeout (1205).
func isRetryableLockError(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// isDataError reports a statement refused for the data it carries, not for
// the state of the database: retrying it as is fails the same way. MySQL and
// MariaDB (strict mode): 1406 data too long, 1366 incorrect string value
// (invalid UTF-8, or a character the column's charset lacks), 1300 invalid
// character string, 1292 and 1265 value truncated, 1264 and 1690 out of range,
// 1048 NULL in a NOT NULL column, 1364 no default value, 3140 invalid JSON,
// 3819 (MySQL) and 4025 (MariaDB) CHECK constraint violated. SQLite: a NOT
// NULL or CHECK constraint, or a text over its size limit.
func isDataError(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1406, 1366, 1300, 1292, 1265, 1264, 1690, 1048, 1364, 3140, 3819, 4025:
			return true
		}
		return false
	}
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "NOT NULL constraint failed") || strings.Contains(msg, "CHECK constraint failed") || strings.Contains(msg, "string or blob too big")
}

// exec runs one write statement in autocommit. (On SQLite a single write
// statement takes the write lock when it starts, like BEGIN IMMEDIATE, so it
// waits on busy_timeout rather than failing; writeMu queues this process's
// writers first.)
func (s *store) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := s.execResult(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s *store) execResult(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s.writeMu != nil {
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
	}
	return s.db.ExecContext(ctx, query, args...)
}

// schemaProbes select every column argo uses, each under the migration
// that creates it, so a missing table or an old schema fails the check and
// names the first file to apply.
var schemaProbes = []struct{ migration, query string }{
	{"000001_argo_task.up.sql", "SELECT id, task_status, execute_time, task_parameter, lease_owner, gmt_modified FROM argo_task WHERE 1=0"},
	{"000001_argo_task.up.sql", "SELECT id, task_pk, attempt, kind, worker, started_at, finished_at, outcome, error_msg, backoff_ms FROM argo_task_attempt WHERE 1=0"},
	{"000001_argo_task.up.sql", "SELECT instance_id, heartbeat_at, started_at, task_names FROM argo_instance WHERE 1=0"},
	{"000001_argo_task.up.sql", "SELECT name, holder, expires_at FROM argo_leader WHERE 1=0"},
	{"000002_attempt_on_task.up.sql", "SELECT " + taskColumns + " FROM argo_task WHERE 1=0"},
	{"000003_submit_token.up.sql", "SELECT submit_token FROM argo_task WHERE 1=0"},
	{"000004_unique_key_bytes.up.sql", uniqueKeyBytesProbe},
}

// checkSchema fails with the file to apply when the schema is missing or old.
func (s *store) checkSchema(ctx context.Context) error {
	for _, p := range schemaProbes {
		rows, err := s.db.QueryContext(ctx, p.query)
		if err != nil {
			return &SchemaError{Dialect: s.dialect, Migration: p.migration, Err: err}
		}
		rows.Close()
	}
	return nil
}

// SchemaError says the argo tables are missing or out of date, and what to apply.
type SchemaError struct {
	Dialect   string
	Migration string // the first file of sql/<Dialect>/ not applied, e.g. "000002_attempt_on_task.up.sql"
	Err       error
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("argo: the argo tables are missing or out of date in this database (%v): apply sql/%s/%s and the files after it (DBAs), run `argoctl migrate -dsn ...`, or set Config.AutoMigrate", e.Err, e.Dialect, e.Migration)
}

func (e *SchemaError) Unwrap() error { return e.Err }

// Migrate applies the embedded migrations of the dialect that are not yet
// recorded in argo_schema_migrations, and returns the files it recorded
// (MigrateSteps tells those applied by hand before apart). It is idempotent
// and safe to run from several processes at once (every statement is IF NOT
// EXISTS, or an ADD COLUMN whose "already exists" error means another
// process applied it).
func Migrate(ctx context.Context, db *sql.DB, dialect string) ([]string, error) {
	steps, err := MigrateSteps(ctx, db, dialect)
	var files []string
	for _, s := range steps {
		files = append(files, s.File)
	}
	return files, err
}

// MigrationStep is one file Migrate recorded in argo_schema_migrations.
type MigrationStep struct {
	File string // e.g. "mysql/000002_attempt_on_task.up.sql"
	// AlreadyPresent: every table and column the file creates was there
	// before this call, without a record: the file was applied by hand (or,
	// as SQLite's 000004, adds nothing to the files before it). Its
	// statements, all idempotent, ran again, and it is now recorded.
	AlreadyPresent bool
}

// MigrateSteps is Migrate, saying for each file whether it was applied by
// hand before (see MigrationStep).
func MigrateSteps(ctx context.Context, db *sql.DB, dialect string) ([]MigrationStep, error) {
	if dialect != DialectMySQL && dialect != DialectSQLite {
		return nil, fmt.Errorf("argo: migrate: dialect %q unknown", dialect)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS argo_schema_migrations (version BIGINT NOT NULL PRIMARY KEY, applied_at BIGINT NOT NULL)"); err != nil {
		if gerr := migrateGrantError(db, "(its record, argo_schema_migrations)", err); gerr != nil {
			return nil, gerr
		}
		return nil, fmt.Errorf("argo: migrate: %w", err)
	}
	files, err := fs.Glob(argosql.FS, dialect+"/*.up.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var applied []MigrationStep
	var present map[string]bool // probed once, before this call changes anything
	for _, f := range files {
		base := strings.TrimPrefix(f, dialect+"/")
		version, err := strconv.ParseInt(strings.SplitN(base, "_", 2)[0], 10, 64)
		if err != nil {
			return applied, fmt.Errorf("argo: migrate: %s: bad version prefix", f)
		}
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM argo_schema_migrations WHERE version = ?", version).Scan(&n); err != nil {
			if gerr := migrateGrantError(db, "(its record, argo_schema_migrations)", err); gerr != nil {
				return applied, gerr
			}
			return applied, fmt.Errorf("argo: migrate: %w", err)
		}
		if n > 0 {
			continue
		}
		if present == nil {
			present = presentMigrations(ctx, db)
		}
		body, err := argosql.FS.ReadFile(f)
		if err != nil {
			return applied, err
		}
		for _, stmt := range splitStatements(string(body)) {
			if _, err := db.ExecContext(ctx, stmt); err != nil && !isDuplicateColumn(err) {
				if gerr := migrateGrantError(db, f, err); gerr != nil {
					return applied, gerr
				}
				return applied, fmt.Errorf("argo: migrate %s: %w\n%s", f, err, stmt)
			}
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO argo_schema_migrations (version, applied_at) VALUES (?, ?)", version, nowMillis()); err != nil && !isDuplicate(err) {
			if gerr := migrateGrantError(db, "(its record, argo_schema_migrations)", err); gerr != nil {
				return applied, gerr
			}
			return applied, fmt.Errorf("argo: migrate: record %s: %w", f, err)
		}
		applied = append(applied, MigrationStep{File: f, AlreadyPresent: present[base]})
	}
	return applied, nil
}

// presentMigrations returns the migration files whose schema probes all
// pass: their tables and columns are there.
func presentMigrations(ctx context.Context, db *sql.DB) map[string]bool {
	present, missing := map[string]bool{}, map[string]bool{}
	for _, p := range schemaProbes {
		rows, err := db.QueryContext(ctx, p.query)
		if err != nil {
			missing[p.migration] = true
			continue
		}
		rows.Close()
		present[p.migration] = true
	}
	for m := range missing {
		delete(present, m)
	}
	return present
}

// splitStatements splits a migration file on semicolons at line ends,
// dropping -- comment lines. Migration files keep semicolons out of strings.
func splitStatements(body string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(body, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteString("\n")
		if strings.HasSuffix(t, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// isDuplicateColumn reports an ADD COLUMN of a column that exists: another
// process applied the same migration meanwhile (MySQL has no ADD COLUMN IF
// NOT EXISTS).
func isDuplicateColumn(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1060
	}
	return err != nil && strings.Contains(err.Error(), "duplicate column name")
}

// isDuplicate reports a unique-key violation on either database.
func isDuplicate(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1062
	}
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}
