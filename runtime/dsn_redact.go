package runtime

import (
	"context"
	"database/sql/driver"
	"io"
	"regexp"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Passwords out of logs, errors and argoctl's output.
//
// A MySQL DSN is shown only in the form RedactDSN rebuilds from the driver's
// own parse: user, network, address and database as written, the password
// replaced by ***, each parameter's name with its value only for the
// driver's plain settings (charset, parseTime, timeout, …); other values are
// ***. A DSN the driver cannot parse, or whose split is ambiguous (an '@'
// after the last '/', where a password holding '/' could end), is shown as
// "mysql:<DSN hidden: …>", with no part of its user-info. Errors of the
// driver that could quote the DSN (parse errors) are cut to their fixed
// wording, and connection errors that contain the password have it replaced.

// shownParamValues are the driver parameters whose values RedactDSN shows
// (when they are plain words): settings, never credentials.
var shownParamValues = map[string]bool{
	"charset": true, "collation": true, "parseTime": true, "loc": true, "timeout": true,
	"readTimeout": true, "writeTimeout": true, "tls": true, "interpolateParams": true,
	"multiStatements": true, "clientFoundRows": true, "columnsWithAlias": true,
	"allowNativePasswords": true, "allowCleartextPasswords": true, "allowOldPasswords": true,
	"allowFallbackToPlaintext": true, "allowAllFiles": true, "rejectReadOnly": true,
	"checkConnLiveness": true, "maxAllowedPacket": true, "compress": true, "timeTruncate": true,
	"time_zone": true, "sql_mode": true, "autocommit": true, "transaction_isolation": true,
	"tx_isolation": true, "innodb_lock_wait_timeout": true, "wait_timeout": true,
}

var (
	plainParamName  = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
	plainParamValue = regexp.MustCompile(`^[A-Za-z0-9_.,:%+-]*$`)
	plainNetwork    = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
)

// RedactDSN returns dsn in a form fit for logs and error messages, with no
// password: "sqlite:" DSNs unchanged (they hold none); a MySQL DSN as
// "mysql:user:***@tcp(host:3306)/db?charset=utf8mb4&secretParam=***", or
// "mysql:<DSN hidden: REASON>" when it cannot be split with certainty;
// anything else as its scheme and "<DSN hidden>".
func RedactDSN(dsn string) string {
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		return dsn
	case strings.HasPrefix(dsn, "mysql:"):
		prefix, raw := "mysql:", strings.TrimPrefix(dsn, "mysql:")
		if strings.HasPrefix(raw, "//") {
			prefix, raw = "mysql://", raw[2:]
		}
		shown, why := redactMySQLDSN(raw)
		if why != "" {
			return prefix + "<DSN hidden: " + why + ">"
		}
		return prefix + shown
	}
	if scheme, _, ok := strings.Cut(dsn, ":"); ok && plainParamName.MatchString(scheme) {
		return scheme + ":<DSN hidden>"
	}
	return "<DSN hidden>"
}

// redactMySQLDSN rebuilds a driver DSN (without the "mysql:" prefix) for
// display, or says why it will not.
func redactMySQLDSN(raw string) (shown, why string) {
	mc, err := mysql.ParseDSN(raw)
	if err != nil {
		return "", "not a valid MySQL DSN"
	}
	slash := strings.LastIndex(raw, "/")
	if slash < 0 {
		return "", "not a valid MySQL DSN"
	}
	tail := raw[slash+1:]
	if strings.Contains(tail, "@") {
		return "", "'@' after the last '/'"
	}
	var b strings.Builder
	at := strings.LastIndex(raw[:slash], "@")
	if at >= 0 {
		b.WriteString(mc.User)
		if strings.Contains(raw[:at], ":") {
			b.WriteString(":***")
		}
		b.WriteString("@")
	}
	// With no '@', whatever precedes the address could be a password whose
	// '@' was forgotten: show only the networks the driver knows.
	if !plainNetwork.MatchString(mc.Net) || (at < 0 && mc.Net != "tcp" && mc.Net != "unix") {
		return "", "unknown network"
	}
	b.WriteString(raw[at+1 : slash])
	b.WriteString("/")
	db, params, hasParams := strings.Cut(tail, "?")
	b.WriteString(db)
	if hasParams {
		b.WriteString("?")
		b.WriteString(redactDSNParams(params))
	}
	return b.String(), ""
}

// redactDSNParams shows each parameter's name (*** for a segment that is
// not a plain name=value), and the value of plain settings.
func redactDSNParams(params string) string {
	var shown []string
	for kv := range strings.SplitSeq(params, "&") {
		key, value, ok := strings.Cut(kv, "=")
		switch {
		case kv == "":
			continue
		case !ok || !plainParamName.MatchString(key):
			shown = append(shown, "***")
		case ok && shownParamValues[key] && plainParamValue.MatchString(value):
			shown = append(shown, key+"="+value)
		default:
			shown = append(shown, key+"=***")
		}
	}
	return strings.Join(shown, "&")
}

// driverDSNErrors are the driver's DSN errors that quote nothing.
var driverDSNErrors = map[string]bool{
	"invalid DSN: did you forget to escape a param value?":                  true,
	"invalid DSN: network address not terminated (missing closing brace)":   true,
	"invalid DSN: missing the slash separating the database name":           true,
	"invalid DSN: interpolateParams can not be used with unsafe collations": true,
}

// describeDSNError returns the wording of a driver error about a DSN
// without what it quotes of the DSN (a parameter's value, or a network
// name, which can hold the password of a DSN the driver split wrongly).
func describeDSNError(err error) string {
	msg := err.Error()
	if driverDSNErrors[msg] {
		return msg
	}
	if i := strings.IndexAny(msg, `:'"`); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg)
}

// redactedError is an error whose text had a secret replaced; errors.Is and
// errors.As still see the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// hideSecret returns err with every occurrence of secret in its text
// replaced by ***, or err itself when its text holds none.
func hideSecret(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), secret, "***"), err: err}
}

// redactingConnector is a MySQL connector whose connection errors never
// carry the password.
type redactingConnector struct {
	driver.Connector
	password string
}

func (c redactingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	return conn, hideSecret(err, c.password)
}

// Close closes the wrapped connector if it holds anything (a failover
// connector's health checks); sql.DB.Close calls it.
func (c redactingConnector) Close() error {
	if closer, ok := c.Connector.(io.Closer); ok {
		return closer.Close()
	}
	return nil
}
