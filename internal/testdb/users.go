package testdb

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MySQLUser creates a MySQL user argo_u_<random>@'%' with a random password
// and the given privileges (such as "SELECT, INSERT, UPDATE, DELETE") on the
// database of dsn (a "mysql:" DSN from MySQLDSN), drops it when the test
// ends, and returns dsn with that user instead of the server's. An empty
// privs creates a user with no grant at all. Needs ARGO_TEST_MYSQL_DSN's
// user to have CREATE USER and GRANT OPTION (root does).
func MySQLUser(t testing.TB, dsn, privs string) string {
	t.Helper()
	admin, _, err := adminDB(MySQLServerDSN(t))
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	cfg, err := mysql.ParseDSN(strings.TrimPrefix(dsn, "mysql:"))
	if err != nil {
		t.Fatalf("testdb: %s is not a mysql: DSN: %v", dsn, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	user, password := "argo_u_"+randomHex(5), randomHex(12)
	if _, err := admin.ExecContext(ctx, "CREATE USER '"+user+"'@'%' IDENTIFIED BY '"+password+"'"); err != nil {
		t.Fatalf("testdb: create user: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP USER IF EXISTS '"+user+"'@'%'"); err != nil {
			t.Logf("testdb: could not drop user %s: %v", user, err)
		}
	})
	if privs != "" {
		if _, err := admin.ExecContext(ctx, "GRANT "+privs+" ON `"+cfg.DBName+"`.* TO '"+user+"'@'%'"); err != nil {
			t.Fatalf("testdb: grant %s: %v", privs, err)
		}
	}
	cfg.User, cfg.Passwd = user, password
	return "mysql:" + cfg.FormatDSN()
}
