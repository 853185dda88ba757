package sqlitedriver

import (
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"

	"modernc.org/sqlite"
)

// SQLite's own lower() lowers ASCII letters only, while MySQL's LOWER
// lowers every script: argoctl list -error ärger found "ÄRGER" on MariaDB
// and nothing on SQLite. argo's case-insensitive searches (Filter's
// ErrorContains and NameContains) lower both sides, so this driver
// replaces lower(X) on the connections it opens with Unicode's default
// lower-case mapping (Go's strings.ToLower, as the pattern is lowered),
// the way SQLite's ICU extension does. It is registered for every
// connection the "sqlite" database/sql driver opens in this process;
// argo's schema has no index on lower().
func init() {
	sqlite.MustRegisterDeterministicScalarFunction("lower", 1, unicodeLower)
}

// unicodeLower is lower(X): NULL for NULL, else X as text, lowered.
func unicodeLower(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	switch v := args[0].(type) {
	case nil:
		return nil, nil
	case string:
		return strings.ToLower(v), nil
	case []byte:
		return strings.ToLower(string(v)), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	default:
		return strings.ToLower(fmt.Sprint(v)), nil
	}
}
