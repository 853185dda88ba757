package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/argo-retry/argo/cmd/argobench/internal/sqlcount"
	"github.com/argo-retry/argo/internal/failover"
	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/runtime"
)

// insertSQL is the hand-written side's INSERT: argo's own statement (the
// storage driver's Statements.InsertTask, submit token included), so both
// sides store the same row and maintain the same indexes. (An earlier copy
// of the statement kept here had lost the submit_token column when argo
// gained it: the hand-written rows skipped uk_submit_token.)
func (b *bencher) insertSQL() string {
	st, err := storage.StatementsFor(b.dialect)
	if err != nil {
		panic(err) // b.dialect comes from runtime.OpenDB
	}
	return st.InsertTask
}

// Task states as stored in argo_task.task_status.
const (
	statePending   = 0
	stateRunning   = 1
	stateSucceeded = 3
)

// handRow holds the values of one task row for the hand-written side,
// computed from the same TaskDef the generated wrapper submits.
type handRow struct {
	def        *runtime.TaskDef
	policyJSON string
	maxAtt     int
	initialSec int
}

func newHandRow(def *runtime.TaskDef) *handRow {
	pol := def.Policy
	if pol.Backoff == "" {
		pol = runtime.DefaultRetryPolicy()
	}
	b, _ := json.Marshal(pol)
	return &handRow{def: def, policyJSON: string(b), maxAtt: pol.MaxAttempts, initialSec: int(pol.Initial / time.Second)}
}

// values returns the INSERT arguments of one call (insertSQL), a new
// submit token last.
func (h *handRow) values(args []byte, now time.Time, state, executeTimes int, due time.Time, leaseOwner string, leaseUntil int64) []any {
	d := h.def
	mode, thread := d.Mode, d.Thread
	if mode == 0 {
		mode = runtime.Immediate
	}
	if thread == 0 {
		thread = runtime.Async
	}
	ms := now.UnixMilli()
	return []any{d.Name, state, executeTimes, h.maxAtt, due.UnixMilli(), d.ParameterTypes, d.MethodName, d.Signature,
		h.initialSec, int(d.Delay / time.Second), string(args), int(mode), int(thread), "", d.Alert, d.AlertActionName, d.FallbackName, "",
		rand.IntN(64), h.policyJSON, leaseOwner, leaseUntil, nil, "", ms, ms, "", "", nil, storage.NewSubmitToken()} // tenant, trace_parent (000009), order_key (000008), token
}

func argsJSON(n int) []byte {
	b, _ := json.Marshal(struct {
		N int `json:"n"`
	}{n})
	return b
}

// sqlitePath returns the file of a "sqlite:PATH" DSN.
func sqlitePath(dsn string) string {
	return strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//")
}

// openCounted opens the database of dsn like runtime.OpenDB does, through a
// driver wrapper that counts statements into c.
func openCounted(dsn string, c *sqlcount.Counter) (*sql.DB, error) {
	plain, dialect, err := runtime.OpenDB(dsn)
	if err != nil {
		return nil, err
	}
	drv := plain.Driver()
	interpolates := false
	if dialect == runtime.DialectMySQL {
		if interpolates, err = mysqlInterpolates(context.Background(), plain); err != nil {
			plain.Close()
			return nil, err
		}
	}
	plain.Close()
	var name string
	maxOpen := 64
	if dialect == runtime.DialectSQLite {
		// The same connection settings as runtime.OpenDB (runtime/store.go).
		path := sqlitePath(dsn)
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		name = "file:" + path + sep + "_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"
		maxOpen = 8
	} else {
		name = strings.TrimPrefix(strings.TrimPrefix(dsn, "mysql:"), "//")
		if interpolates {
			// runtime.OpenDB sends arguments interpolated; so must this handle.
			sep := "?"
			if strings.Contains(name, "?") {
				sep = "&"
			}
			name += sep + "interpolateParams=true"
		}
	}
	var base driver.Connector = sqlcount.DSNConnector(drv, name)
	if dialect == runtime.DialectMySQL {
		// A DSN may name several servers (tcp(h1:3306,h2:3306)): connect the
		// way runtime.OpenDB does, to one usable server of the list.
		if base, err = mysqlConnector(name); err != nil {
			return nil, fmt.Errorf("DSN %q: %w", runtime.RedactDSN(dsn), err)
		}
	}
	db := sql.OpenDB(sqlcount.Connector(base, c))
	db.SetMaxOpenConns(maxOpen)
	db.SetMaxIdleConns(maxOpen)
	return db, nil
}

// ensureMySQLDatabase creates the database a mysql: DSN names if it is
// missing. It connects to that database first, so that a user with rights on
// it alone needs nothing more; only when the server answers that it does not
// exist (1049) does it connect without a database, to create it.
func ensureMySQLDatabase(ctx context.Context, dsn string) error {
	db, _, err := runtime.OpenDB(dsn)
	if err != nil {
		return err
	}
	err = db.PingContext(ctx)
	db.Close()
	var me *mysql.MySQLError
	if err == nil || !errors.As(err, &me) || me.Number != 1049 {
		return err
	}
	raw := strings.TrimPrefix(strings.TrimPrefix(dsn, "mysql:"), "//")
	cfg, err := mysql.ParseDSN(raw)
	if err == nil {
		err = failover.ParseServerList(cfg, raw)
	}
	if err != nil {
		return fmt.Errorf("DSN %q: %w", runtime.RedactDSN(dsn), err)
	}
	name := cfg.DBName
	if strings.ContainsAny(name, "`") {
		return fmt.Errorf("database name %q not supported", name)
	}
	cfg.DBName = ""
	conn, err := failover.NewConnector(cfg, failover.Options{})
	if err != nil {
		return fmt.Errorf("DSN %q: %w", runtime.RedactDSN(dsn), err)
	}
	server := sql.OpenDB(conn)
	defer server.Close()
	if _, err := server.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+name+"`"); err != nil {
		return fmt.Errorf("database %s does not exist and this user may not create it (%w): have an administrator run CREATE DATABASE `%s` and GRANT ALL ON `%s`.* to this user", name, err, name, name)
	}
	return nil
}

// resetTables empties argo's task tables.
func resetTables(ctx context.Context, db *sql.DB, dialect string) error {
	if dialect == runtime.DialectMySQL {
		for _, t := range []string{"argo_task", "argo_task_attempt"} {
			if _, err := db.ExecContext(ctx, "TRUNCATE TABLE "+t); err != nil {
				return err
			}
		}
		return nil
	}
	for _, q := range []string{"DELETE FROM argo_task", "DELETE FROM argo_task_attempt", "PRAGMA wal_checkpoint(TRUNCATE)", "VACUUM"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// checkBenchDatabase refuses a database whose argo_task holds rows that
// argobench did not write: the bench deletes every row.
func checkBenchDatabase(ctx context.Context, db *sql.DB) error {
	var n int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM argo_task WHERE task_id NOT LIKE 'argobench.%'").Scan(&n)
	if err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("argo_task in this database holds %d rows argobench did not write, and the bench deletes every row: point -dsn at a database used only for benchmarking (or pass -force)", n)
	}
	return nil
}

// countWhere counts argo_task rows.
func countWhere(ctx context.Context, db *sql.DB, where string, args ...any) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM argo_task WHERE "+where, args...).Scan(&n)
	return n, err
}

var errTimeout = errors.New("timed out")

// dropArgoTables drops argo's tables and its migration record.
func dropArgoTables(ctx context.Context, db *sql.DB) error {
	for _, t := range []string{"argo_task", "argo_task_attempt", "argo_instance", "argo_leader", "argo_operator_action", "argo_discard_request", "argo_schema_migrations"} {
		if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+t); err != nil {
			return err
		}
	}
	return nil
}

// mysqlInterpolates reports whether a handle sends statement arguments
// interpolated (one round trip) rather than through a server-side prepare:
// it runs a statement with an argument and watches the session's
// Com_stmt_prepare counter.
func mysqlInterpolates(ctx context.Context, db *sql.DB) (bool, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	prepares := func() (int64, error) {
		var name string
		var n int64
		err := conn.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Com_stmt_prepare'").Scan(&name, &n)
		return n, err
	}
	before, err := prepares()
	if err != nil {
		return false, err
	}
	var one int
	if err := conn.QueryRowContext(ctx, "SELECT ?", 1).Scan(&one); err != nil {
		return false, err
	}
	after, err := prepares()
	return after == before, err
}

// mysqlConnector connects to the server, or to one usable server of the
// list, that a go-sql-driver DSN names (internal/failover).
func mysqlConnector(dsn string) (driver.Connector, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if err := failover.ParseServerList(cfg, dsn); err != nil {
		return nil, err
	}
	return failover.NewConnector(cfg, failover.Options{})
}
