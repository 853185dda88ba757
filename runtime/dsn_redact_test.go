package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Every secret in these DSNs contains "Pw" and nothing else in them does,
// so any "Pw" in an output is a leak of (part of) a password or a secret.
var redactCases = []struct {
	dsn  string
	want string // "" when only the absence of "Pw" is checked
}{
	{"mysql:user:Pw1:Pw2@tcp(127.0.0.1:1)/db", "mysql:user:***@tcp(127.0.0.1:1)/db"},
	{"mysql:user:Pw1@Pw2@tcp(127.0.0.1:1)/db", "mysql:user:***@tcp(127.0.0.1:1)/db"},
	{"mysql:user:Pw1/Pw2@tcp(127.0.0.1:1)/db", "mysql:user:***@tcp(127.0.0.1:1)/db"},
	{"mysql:user:Pw1?Pw2@tcp(127.0.0.1:1)/db", "mysql:user:***@tcp(127.0.0.1:1)/db"},
	{"mysql:user:Pw1(Pw2@tcp(127.0.0.1:1)/db", "mysql:user:***@tcp(127.0.0.1:1)/db"},
	{"mysql:user:Pw1)Pw2@tcp(127.0.0.1:1)/db", "mysql:user:***@tcp(127.0.0.1:1)/db"},
	{"mysql:user:Pw1%Pw2%40@tcp(127.0.0.1:1)/db", "mysql:user:***@tcp(127.0.0.1:1)/db"},
	{"mysql:user:Pw1 Pw2 @tcp(127.0.0.1:1)/db", "mysql:user:***@tcp(127.0.0.1:1)/db"},
	{"mysql:user:Pw:@/?()% x@tcp(127.0.0.1:1)/db?parseTime=true", "mysql:user:***@tcp(127.0.0.1:1)/db?parseTime=true"},
	{"mysql://user:Pw1:Pw2@tcp(127.0.0.1:1)/db", "mysql://user:***@tcp(127.0.0.1:1)/db"},
	{"mysql:user:Pw1@unix(/tmp/mysql.sock)/db", "mysql:user:***@unix(/tmp/mysql.sock)/db"},
	// '@' in a parameter value, with and without ':' in the password.
	{"mysql:user:Pw1@tcp(127.0.0.1:1)/db?connectionAttributes=a@b", "mysql:<DSN hidden: '@' after the last '/'>"},
	{"mysql:user:Pw1:Pw2@tcp(127.0.0.1:1)/db?x=a@b&y=c", "mysql:<DSN hidden: '@' after the last '/'>"},
	// A password holding a whole DSN: the driver would split it wrongly.
	{"mysql:user:Pw1@tcp(127.0.0.1:2)/Pw2?Pw3=x@tcp(127.0.0.1:1)", "mysql:<DSN hidden: '@' after the last '/'>"},
	{"mysql:user:Pw1@tcp(127.0.0.1:2)/Pw2@tcp(127.0.0.1:1)", "mysql:<DSN hidden: '@' after the last '/'>"},
	// A password with '/' and no database: the last '/' is in the password.
	{"mysql:user:Pw1/Pw2@tcp(127.0.0.1:1)", "mysql:<DSN hidden: not a valid MySQL DSN>"},
	{"mysql:user:Pw(x)/Pw2@tcp(127.0.0.1:1)", ""},
	// The '@' forgotten: what precedes the address may be the password.
	{"mysql:Pwonly(127.0.0.1:1)/db", "mysql:<DSN hidden: unknown network>"},
	{"mysql:user:Pw1(127.0.0.1:1)/db", ""},
	{"mysql:user:Pw1", "mysql:<DSN hidden: not a valid MySQL DSN>"},
	{"mysql:user:Pw1@tcp(127.0.0.1:1", "mysql:<DSN hidden: not a valid MySQL DSN>"},
	// Parameters: names shown, values only for plain settings.
	{"mysql:user:Pw1@tcp(127.0.0.1:1)/db?charset=utf8mb4&password=Pwkey&Pwraw&time_zone=%27%2B00%3A00%27&custom=Pw2",
		"mysql:user:***@tcp(127.0.0.1:1)/db?charset=utf8mb4&password=***&***&time_zone=%27%2B00%3A00%27&custom=***"},
	{"mysql:user:Pw1@tcp(127.0.0.1:1)/db?parseTime=Pwx", ""}, // the driver's error quotes the value
	{"mysql:user:Pw1@tcp(127.0.0.1:1)/db?charset=Pw'x", ""},
	// No password, no user-info: unchanged.
	{"mysql:user@tcp(127.0.0.1:1)/db", "mysql:user@tcp(127.0.0.1:1)/db"},
	{"mysql:tcp(127.0.0.1:1)/db", "mysql:tcp(127.0.0.1:1)/db"},
	{"mysql:user:@tcp(127.0.0.1:1)/db", "mysql:user:***@tcp(127.0.0.1:1)/db"},
	// Not argo DSNs.
	{"postgres://user:Pw1@host/db", "postgres:<DSN hidden>"},
	{"user:Pw1@tcp(127.0.0.1:1)/db", "user:<DSN hidden>"},
	{"Pw1@tcp(127.0.0.1:1)/db", "<DSN hidden>"},
}

func TestRedactDSN(t *testing.T) {
	for _, c := range redactCases {
		got := RedactDSN(c.dsn)
		if strings.Contains(got, "Pw") {
			t.Errorf("RedactDSN(%q) = %q: shows a secret", c.dsn, got)
		}
		if c.want != "" && got != c.want {
			t.Errorf("RedactDSN(%q) = %q, want %q", c.dsn, got, c.want)
		}
	}
	for _, dsn := range []string{"sqlite:argo.db", "sqlite:/var/lib/app/argo.db?_pragma=foreign_keys(1)", "sqlite::memory:", "sqlite://tmp/a@b:c.db"} {
		if got := RedactDSN(dsn); got != dsn {
			t.Errorf("RedactDSN(%q) = %q, want it unchanged", dsn, got)
		}
	}
}

// OpenDB's errors, and the errors of reaching the database, never carry a
// secret of the DSN (nothing listens on port 1).
func TestOpenDBErrorsHidePasswords(t *testing.T) {
	for _, c := range redactCases {
		db, _, err := OpenDB(c.dsn)
		if err != nil {
			if strings.Contains(err.Error(), "Pw") {
				t.Errorf("OpenDB(%q): %v: shows a secret", c.dsn, err)
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = db.PingContext(ctx)
		cancel()
		db.Close()
		if err == nil {
			t.Errorf("Ping(%q) succeeded on port 1", c.dsn)
		} else if strings.Contains(err.Error(), "Pw") {
			t.Errorf("Ping(%q): %v: shows a secret", c.dsn, err)
		}
	}
	// Through Start, as an application sees it.
	_, err := Start(context.Background(), Config{DSN: "mysql:user:Pw1:Pw2@tcp(127.0.0.1:1)/db", Logger: quietLogger()})
	if err == nil || strings.Contains(err.Error(), "Pw") {
		t.Errorf("Start on an unreachable server: %v (want an error without the password)", err)
	}
}

func TestDescribeDSNErrorQuotesNothing(t *testing.T) {
	for _, dsn := range []string{"user:Pw1@tcp(h:1)/db?parseTime=Pwx", "user:Pw1@tcp(h:1)/Pw%zz", "user:Pw1/Pw2@tcp(h:1)", "user:Pw1@tcp(h:1)/db?timeTruncate=Pwx"} {
		_, err := mysql.ParseDSN(dsn)
		if err == nil {
			t.Fatalf("ParseDSN(%q) succeeded; the case needs a parse error", dsn)
		}
		if got := describeDSNError(err); strings.Contains(got, "Pw") || got == "" {
			t.Errorf("describeDSNError(%v) = %q", err, got)
		}
	}
}

func TestHideSecretKeepsTheError(t *testing.T) {
	inner := &mysql.MySQLError{Number: 1045, Message: "denied for Pw1"}
	err := hideSecret(inner, "Pw1")
	if strings.Contains(err.Error(), "Pw1") {
		t.Errorf("hideSecret: %v", err)
	}
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1045 {
		t.Errorf("hideSecret lost the driver error: %v", err)
	}
	if plain := errors.New("dial tcp"); hideSecret(plain, "Pw1") != plain {
		t.Error("hideSecret wrapped an error without the secret")
	}
}
