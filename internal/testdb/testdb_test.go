package testdb

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

func TestSQLiteDSN(t *testing.T) {
	dsn := SQLiteDSN(t)
	path, ok := strings.CutPrefix(dsn, "sqlite:")
	if !ok {
		t.Fatalf("SQLiteDSN = %q, want sqlite: prefix", dsn)
	}
	if filepath.Base(path) != "argo.db" {
		t.Errorf("SQLiteDSN file = %q, want argo.db", path)
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("directory of %q: %v", path, err)
	}
	if !strings.HasPrefix(dir, os.TempDir()) {
		t.Errorf("SQLiteDSN dir %q is not under %q", dir, os.TempDir())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("database file %q already exists (err=%v)", path, err)
	}
	if other := SQLiteDSN(t); other == dsn {
		t.Errorf("two SQLiteDSN calls gave the same DSN %q", dsn)
	}
}

// openMySQL opens a "mysql:" DSN from this package.
func openMySQL(t *testing.T, dsn string) (*sql.DB, *mysql.Config) {
	t.Helper()
	raw, ok := strings.CutPrefix(dsn, "mysql:")
	if !ok {
		t.Fatalf("DSN %q lacks mysql: prefix", dsn)
	}
	cfg, err := mysql.ParseDSN(raw)
	if err != nil {
		t.Fatalf("ParseDSN(%q): %v", raw, err)
	}
	db, err := sql.Open("mysql", raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, cfg
}

func databaseExists(t *testing.T, name string) bool {
	t.Helper()
	db, _ := openMySQL(t, "mysql:"+MySQLServerDSN(t))
	var n int
	err := db.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n > 0
}

func TestMySQLDSN(t *testing.T) {
	var name string
	t.Run("create", func(t *testing.T) {
		dsn := MySQLDSN(t)
		db, cfg := openMySQL(t, dsn)
		if !strings.HasPrefix(cfg.DBName, "argo_t_") {
			t.Fatalf("database name %q, want argo_t_ prefix", cfg.DBName)
		}
		name = cfg.DBName
		var got sql.NullString
		if err := db.QueryRow("SELECT DATABASE()").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got.String != name {
			t.Fatalf("SELECT DATABASE() = %q, want %q", got.String, name)
		}
		// Usable: a table can be made and written.
		if _, err := db.Exec("CREATE TABLE t (id BIGINT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("INSERT INTO t VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		if other := MySQLDSN(t); other == dsn {
			t.Errorf("two MySQLDSN calls gave the same DSN")
		}
	})
	if name == "" {
		return // skipped or failed
	}
	if databaseExists(t, name) {
		t.Errorf("database %s still exists after its test ended", name)
	}
}

func TestMySQLDSNKeepsParams(t *testing.T) {
	server := MySQLServerDSN(t)
	cfg, err := mysql.ParseDSN(server)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Params = map[string]string{"time_zone": "'+00:00'"}
	cfg.Timeout = 7 * time.Second
	t.Setenv(EnvMySQLDSN, cfg.FormatDSN())

	db, got := openMySQL(t, MySQLDSN(t))
	if got.Timeout != 7*time.Second || got.Params["time_zone"] != "'+00:00'" {
		t.Errorf("params lost: timeout=%v params=%v", got.Timeout, got.Params)
	}
	var tz string
	if err := db.QueryRow("SELECT @@session.time_zone").Scan(&tz); err != nil {
		t.Fatal(err)
	}
	if tz != "+00:00" {
		t.Errorf("session time_zone = %q, want +00:00", tz)
	}
}

func TestBackends(t *testing.T) {
	bs := Backends(t)
	names := map[string]bool{}
	for _, b := range bs {
		names[b.Name] = true
		if !strings.HasPrefix(b.DSN, b.Name+":") {
			t.Errorf("backend %s has DSN %q", b.Name, b.DSN)
		}
	}
	if !names["sqlite"] {
		t.Error("no sqlite backend")
	}
	if os.Getenv(EnvMySQLDSN) != "" && !names["mysql"] {
		t.Error("no mysql backend although " + EnvMySQLDSN + " is set")
	}
}

// TestPrivateServerRestart checks that a private server keeps its data across
// a clean stop and a crash.
func TestPrivateServerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a MariaDB server")
	}
	s := NewMySQLServer(t)
	db, _ := openMySQL(t, s.DSN(t))
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id BIGINT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}

	s.Stop(t)
	if err := db.PingContext(ctx); err == nil {
		t.Fatal("ping succeeded while the server was stopped")
	}
	s.Start(t)
	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatal(err)
	}

	s.Kill(t)
	s.Start(t)
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("after stop and crash: %d rows, want 2", n)
	}
}

// TestSharedServerRestartCommands checks the commands `make test` exports, on
// the shared server. It only runs when asked to (ARGO_TEST_SHARED_RESTART=1),
// because stopping the shared server would break other packages' tests that
// run at the same time.
func TestSharedServerRestartCommands(t *testing.T) {
	if os.Getenv("ARGO_TEST_SHARED_RESTART") == "" {
		t.Skip("set ARGO_TEST_SHARED_RESTART=1 to stop and start the shared server")
	}
	stop, start, kill := RestartableMySQL(t)
	db, _ := openMySQL(t, MySQLDSN(t))
	if _, err := db.Exec("CREATE TABLE t (id BIGINT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	Sh(t, stop)
	if err := db.Ping(); err == nil {
		t.Fatal("ping succeeded while the server was stopped")
	}
	Sh(t, start)
	if kill != "" {
		Sh(t, kill)
		Sh(t, start)
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("after restart: %d rows, want 1", n)
	}
	Sh(t, os.Getenv(EnvMySQLAdmin)+" ping")
}

// TestMySQLIDsAreNotConsecutive checks that a database from MySQLDSN hands
// out ids IDOffset, IDOffset+IDStep, …, like a Galera cluster, so that tests
// assuming ids 1, 2, 3 fail.
func TestMySQLIDsAreNotConsecutive(t *testing.T) {
	db, _ := openMySQL(t, MySQLDSN(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db.SetMaxOpenConns(3) // several connections: each gets the session variables
	if _, err := db.ExecContext(ctx, "CREATE TABLE ids (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, v INT)"); err != nil {
		t.Fatal(err)
	}
	var got []int64
	for i := range 4 {
		res, err := db.ExecContext(ctx, "INSERT INTO ids (v) VALUES (?)", i)
		if err != nil {
			t.Fatal(err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	for i, id := range got {
		if want := int64(IDOffset + i*IDStep); id != want {
			t.Fatalf("ids %v, want %d, %d, … (step %d)", got, IDOffset, IDOffset+IDStep, IDStep)
		}
	}
}
