package costgate

import (
	"database/sql"
	"strings"

	"github.com/argo-retry/argo/cmd/argobench/internal/sqlcount"
	"github.com/argo-retry/argo/runtime"
)

// OpenSQLite opens the SQLite database of dsn ("sqlite:PATH") with the
// connection settings of runtime.OpenDB (runtime/store.go), through
// sqlcount's driver wrapper counting into c (sqliteObserver). Use it as
// runtime.Config.DB with Dialect "sqlite".
func OpenSQLite(dsn string, c *Counter) (*sql.DB, error) {
	plain, _, err := runtime.OpenDB(dsn)
	if err != nil {
		return nil, err
	}
	drv := plain.Driver()
	plain.Close()
	path := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//")
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	name := "file:" + path + sep + "_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"
	db := sql.OpenDB(sqlcount.Observe(sqlcount.DSNConnector(drv, name), sqliteObserver(c)))
	db.SetMaxOpenConns(8)
	return db, nil
}

// sqliteObserver returns, for each connection, what counts its requests
// into c: each statement, BEGIN, COMMIT and ROLLBACK is one trip (SQLite
// runs in the process: a request is a call into the engine) and is
// counted as itself; a prepare is not a trip (it runs no statement).
func sqliteObserver(c *Counter) func() func(sqlcount.Event) {
	return func() func(sqlcount.Event) {
		s := &session{c: c}
		return func(e sqlcount.Event) {
			if e.Kind == sqlcount.KindPrepare {
				return
			}
			text := e.Query
			if e.Kind != sqlcount.KindStatement {
				text = string(e.Kind)
			}
			s.trip()
			s.statement(text)
		}
	}
}
