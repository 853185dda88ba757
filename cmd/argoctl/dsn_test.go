package main

import (
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/go-sql-driver/mysql"
)

// argoctl never prints a password, whatever the DSN holds: through ARGO_DSN
// and -dsn, for DSNs it cannot open, cannot parse, or cannot reach (nothing
// listens on port 1). Every secret below contains "Pw"; nothing else does.
func TestNoPasswordInOutput(t *testing.T) {
	for _, c := range []struct {
		dsn  string
		want string // on stderr
	}{
		{"mysql:user:Pw1:Pw2@tcp(127.0.0.1:1)/argo", "database unreachable (mysql:user:***@tcp(127.0.0.1:1)/argo): dial tcp 127.0.0.1:1"},
		{"mysql:user:Pw1@Pw2/Pw3?Pw4(Pw5)Pw6%Pw7 Pw8@tcp(127.0.0.1:1)/argo", "database unreachable (mysql:user:***@tcp(127.0.0.1:1)/argo)"},
		{"mysql:user:Pw1@tcp(127.0.0.1:1)/argo?connectionAttributes=a@b", "write \"mysql:user:password@tcp(host:3306)/dbname\", with any '@'"},
		{"mysql:user:Pw1:Pw2@tcp(127.0.0.1:1)/argo?x=a@b", "cannot be split with certainty"},
		{"mysql:user:Pw1/Pw2@tcp(127.0.0.1:1)", "is not a MySQL DSN"},
		{"mysql:user:Pw1(127.0.0.1:1)/argo", "cannot be split with certainty (unknown network)"},
		{"mysql:user:Pw1@tcp(127.0.0.1:1)/argo?parseTime=Pw2", "is not a MySQL DSN (invalid bool value)"},
		{"mysql:user:Pw1@tcp(127.0.0.1:1)/", "names no database"},
		{"mysql:user:Pw1@tcp(127.0.0.1:1)/argo?charset=gbk&multiStatements=true&password=Pw2", "multiStatements=true"},
		{"postgres://user:Pw1@host/argo", `DSN "postgres:<DSN hidden>"`},
		{"user:Pw1@tcp(127.0.0.1:1)/argo", `want "sqlite:PATH"`},
	} {
		failCtl(t, c.dsn, 1, c.want, "stats")
		for _, args := range [][]string{{"stats"}, {"-dsn", c.dsn, "list"}, {"-o", "json", "show", "1"}, {"migrate"}} {
			out, errOut, _ := ctl(t, c.dsn, args...)
			if strings.Contains(out+errOut, "Pw") {
				t.Errorf("argoctl %s with DSN %q printed a secret:\n%s%s", strings.Join(args, " "), c.dsn, out, errOut)
			}
		}
	}
}

// A wrong password against the real server: the refusal names the user,
// not the password.
func TestNoPasswordInOutputWrongPassword(t *testing.T) {
	cfg, err := mysql.ParseDSN(testdb.MySQLServerDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd, cfg.DBName = "argo_nobody", "Pw1:@/?() %Pw2", "argo"
	dsn := "mysql:" + cfg.FormatDSN()
	out, errOut, code := ctl(t, dsn, "stats")
	if code != 1 || !strings.Contains(errOut, "database unreachable (mysql:argo_nobody:***@") || !strings.Contains(errOut, "Access denied") {
		t.Errorf("exit %d, stderr %q: want a refused login", code, errOut)
	}
	if strings.Contains(out+errOut, "Pw") {
		t.Errorf("argoctl printed the password:\n%s%s", out, errOut)
	}
}
