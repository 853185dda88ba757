package runtime

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
	argosql "github.com/argo-retry/argo/sql"
	"github.com/go-sql-driver/mysql"
)

// wantErrText fails the test unless err holds every one of wants and none of
// the unwanted texts.
func wantErrText(t *testing.T, what string, err error, wants []string, unwanted ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	t.Logf("%s: %v", what, err)
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q lacks %q", what, err, w)
		}
	}
	for _, u := range unwanted {
		if strings.Contains(err.Error(), u) {
			t.Errorf("%s: %q says %q", what, err, u)
		}
	}
}

// A sqlite: DSN in a missing directory names the directory and the reason,
// and says what to do; nothing is created.
func TestStartSQLiteMissingDirectory(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "missing")
	_, err := Start(context.Background(), Config{DSN: "sqlite:" + filepath.Join(dir, "argo.db"), AutoMigrate: true, Logger: quietLogger()})
	wantErrText(t, "missing directory", err, []string{dir, "no such file or directory", "mkdir -p " + dir}, "cannot reach")
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directory was created: %v", err)
	}

	file := filepath.Join(base, "plain")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Start(context.Background(), Config{DSN: "sqlite:" + filepath.Join(file, "argo.db"), AutoMigrate: true, Logger: quietLogger()})
	wantErrText(t, "a file as the directory", err, []string{file + " is a file, not a directory"})

	// The DSN names a directory, not a file: the path is named.
	_, err = Start(context.Background(), Config{DSN: "sqlite:" + base, AutoMigrate: true, Logger: quietLogger()})
	wantErrText(t, "a directory as the file", err, []string{"cannot open the SQLite file " + base, "not a directory"}, "cannot reach")
}

// A refused Start removes the SQLite file it created, and only that one: a
// file that existed before stays, empty or not.
func TestRefusedStartLeavesNoFile(t *testing.T) {
	ctx := context.Background()
	refused := func(t *testing.T, path string) {
		t.Helper()
		_, err := Start(ctx, Config{DSN: "sqlite:" + path, Logger: quietLogger()}) // no AutoMigrate: no tables
		var se *SchemaError
		if !errors.As(err, &se) {
			t.Fatalf("Start without tables: %v, want a SchemaError", err)
		}
	}
	t.Run("created", func(t *testing.T) {
		dir := t.TempDir()
		refused(t, filepath.Join(dir, "argo.db"))
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Fatalf("a refused Start left %v (%v)", ents, err)
		}
	})
	t.Run("empty file existed", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "argo.db")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		refused(t, path)
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("a refused Start removed a file that existed before: %v", err)
		}
	})
	t.Run("database existed", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "argo.db")
		db, _, err := OpenDB("sqlite:" + path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("CREATE TABLE unrelated (x INT)"); err != nil {
			t.Fatal(err)
		}
		db.Close()
		refused(t, path)
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("a refused Start removed a database that existed before: %v", err)
		}
	})
	t.Run("tables written meanwhile", func(t *testing.T) {
		// Another process (a migrate) wrote tables into the file this
		// Start created, before the Start was refused: the file stays.
		path := filepath.Join(t.TempDir(), "argo.db")
		created := newSQLiteFile("sqlite:" + path)
		if created != path {
			t.Fatalf("newSQLiteFile = %q, want %q", created, path)
		}
		db, _, err := OpenDB("sqlite:" + path)
		if err != nil {
			t.Fatal(err)
		}
		other := openTestDB(t, "sqlite:"+path)
		if _, err := Migrate(ctx, other, DialectSQLite); err != nil {
			t.Fatal(err)
		}
		closeRefused(db, created)
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("a refused Start removed a file another process migrated: %v", err)
		}
	})
}

// A MySQL DSN naming a database the server lacks says it does not exist and
// how to create it, not that the server is out of reach.
func TestStartUnknownMySQLDatabase(t *testing.T) {
	dsn := testdb.MySQLDSN(t)
	cfg, err := mysql.ParseDSN(strings.TrimPrefix(dsn, "mysql:"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName += "_missing"
	_, err = Start(context.Background(), Config{DSN: "mysql:" + cfg.FormatDSN(), AutoMigrate: true, Logger: quietLogger()})
	wantErrText(t, "unknown database", err, []string{"does not exist", "CREATE DATABASE `" + cfg.DBName + "`", "1049"}, "cannot reach")

	// A user without any right on the database is told which grants to ask for.
	noRights := testdb.MySQLUser(t, dsn, "")
	_, err = Start(context.Background(), Config{DSN: noRights, Logger: quietLogger()})
	wantErrText(t, "user without rights", err, []string{"1044", "GRANT SELECT, INSERT, UPDATE, DELETE ON `"}, "cannot reach")
}

// AutoMigrate with a user that may not CREATE says which grant is missing
// and the GRANT statement for it.
func TestAutoMigrateWithoutCreateGrant(t *testing.T) {
	dsn := testdb.MySQLDSN(t)
	user := testdb.MySQLUser(t, dsn, "SELECT, INSERT, UPDATE, DELETE")
	_, err := Start(context.Background(), Config{DSN: user, AutoMigrate: true, Logger: quietLogger()})
	wantErrText(t, "AutoMigrate without CREATE", err, []string{"lacks the CREATE grant", "1142", "GRANT SELECT, INSERT, UPDATE, CREATE, ALTER, INDEX ON `", "argo_u_", "without Config.AutoMigrate"})

	// With the schema there but 000002 to apply, the missing grant is ALTER.
	root := openTestDB(t, dsn)
	applyFileByHand(t, root, DialectMySQL, "000001_argo_task.up.sql")
	if _, err := root.Exec("CREATE TABLE argo_schema_migrations (version BIGINT NOT NULL PRIMARY KEY, applied_at BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := root.Exec("INSERT INTO argo_schema_migrations VALUES (1, 1)"); err != nil {
		t.Fatal(err)
	}
	user = testdb.MySQLUser(t, dsn, "SELECT, INSERT, UPDATE, DELETE, CREATE")
	_, err = Start(context.Background(), Config{DSN: user, AutoMigrate: true, Logger: quietLogger()})
	wantErrText(t, "AutoMigrate without ALTER", err, []string{"migrate mysql/000002_attempt_on_task.up.sql", "lacks the ALTER grant"})
}

// The grants docs/mysql.md lists: a runtime needs only SELECT, INSERT,
// UPDATE and DELETE on a schema created by another user; migrating needs
// SELECT, INSERT, CREATE, ALTER and INDEX, and UPDATE since 000017 (its
// backfill of has_downstream). A user lacking one is told which.
func TestMySQLGrants(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.MySQLDSN(t)
	migrator := testdb.MySQLUser(t, dsn, "SELECT, INSERT, UPDATE, CREATE, ALTER, INDEX")
	db := openTestDB(t, migrator)
	if applied, err := Migrate(ctx, db, DialectMySQL); err != nil || len(applied) == 0 {
		t.Fatalf("Migrate with SELECT, INSERT, UPDATE, CREATE, ALTER, INDEX: %v, %v", applied, err)
	}

	cfg := testConfig(testdb.MySQLUser(t, dsn, "SELECT, INSERT, UPDATE, DELETE"))
	cfg.AutoMigrate = false
	rt, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start with SELECT, INSERT, UPDATE, DELETE: %v", err)
	}
	var calls atomic.Int32
	flaky := &TaskDef{Name: "grants.flaky", Policy: RetryPolicy{MaxAttempts: 3, Backoff: BackoffFixed, Initial: 10 * time.Millisecond}, Run: func(ctx context.Context, args []byte) error {
		if calls.Add(1) == 1 {
			return errors.New("first attempt fails")
		}
		return nil
	}}
	later := &TaskDef{Name: "grants.later", Mode: Scheduled, Delay: time.Hour, Run: func(ctx context.Context, args []byte) error { return nil }}
	if err := rt.Register(flaky, later); err != nil {
		t.Fatal(err)
	}
	id, err := rt.Submit(ctx, Call{Task: flaky, Args: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the task to succeed on its second attempt", func() bool {
		task, err := rt.Inspector().Get(ctx, id)
		return err == nil && task.State == StateSucceeded
	})
	laterID, err := rt.Submit(ctx, Call{Task: later, Args: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	in := rt.Inspector()
	in.SingleOperatorDiscard = true
	if err := in.Discard(ctx, laterID, "grants test"); err != nil {
		t.Fatalf("discard: %v", err)
	}
	// The retention purge (DELETE) of both finished rows.
	if _, err := rt.store.Purge(ctx, toMillis(time.Now().Add(time.Hour)), 1000); err != nil {
		t.Fatalf("purge: %v", err)
	}
	var left int
	if err := openTestDB(t, dsn).QueryRow("SELECT COUNT(*) FROM argo_task").Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d rows left after the purge (%v), want 0", left, err)
	}
	if err := rt.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}

	// One grant fewer: the error names it, and the GRANT that is needed.
	for _, c := range []struct{ privs, lacks string }{{"INSERT, UPDATE, DELETE", "SELECT"}, {"SELECT, INSERT, DELETE", "UPDATE"}, {"SELECT, UPDATE, DELETE", "INSERT"}} {
		_, err := Start(ctx, Config{DSN: testdb.MySQLUser(t, dsn, c.privs), Logger: quietLogger()})
		wantErrText(t, "runtime with "+c.privs, err, []string{"lacks the " + c.lacks + " grant", "GRANT SELECT, INSERT, UPDATE, DELETE ON `"}, "missing or out of date")
	}
	for _, c := range []struct{ privs, lacks string }{{"INSERT, CREATE, ALTER", "SELECT"}, {"SELECT, CREATE, ALTER", "INSERT"}, {"SELECT, INSERT, CREATE, ALTER, INDEX", "UPDATE"}} {
		_, err := Migrate(ctx, openTestDB(t, testdb.MySQLUser(t, testdb.MySQLDSN(t), c.privs)), DialectMySQL)
		wantErrText(t, "migrate with "+c.privs, err, []string{"lacks the " + c.lacks + " grant", "GRANT SELECT, INSERT, UPDATE, CREATE, ALTER, INDEX ON `"})
	}
}

// openTestDB opens dsn with OpenDB and closes it when the test ends.
func openTestDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, _, err := OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// applyFileByHand runs the statements of one embedded migration file, as a
// DBA applying it by hand does (no record in argo_schema_migrations).
func applyFileByHand(t *testing.T, db *sql.DB, dialect, file string) {
	t.Helper()
	body, err := argosql.FS.ReadFile(dialect + "/" + file)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range storage.SplitStatements(string(body)) {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
}
