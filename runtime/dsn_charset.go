package runtime

import (
	"database/sql"
	"database/sql/driver"
	"log/slog"
	"regexp"
	"strings"
	"sync"

	"github.com/go-sql-driver/mysql"

	"github.com/argo-retry/argo/internal/failover"
)

// Client-side interpolation and the connection charset (MySQL).
//
// With client-side interpolation the driver writes each argument into the
// statement text, escaping quotes with a backslash. That is safe only when
// the server reads the text in a charset where no multi-byte character can
// end in the byte 0x5c ('\'): in GBK, Big5, SJIS, CP932 and GB18030 it can,
// so an argument holding 0xbf 0x27 becomes 0xbf 0x5c 0x27, which the server
// reads as one GBK character followed by a quote that ends the string, and
// the rest of the argument runs as SQL (with multi-statement queries on, any
// SQL). argo therefore interpolates, and opens its multi-statement pool for
// one-round-trip finishes (internal/storage/mysqldriver/onetrip.go), only when the connection
// charset is one of interpolationSafeCharsets; otherwise every statement is
// a server-side prepared statement (one round trip more per statement) and
// finishes take the transaction path.
//
// The charset is judged from the DSN (charset=, collation= and any system
// variable that sets character_set_client) as the driver applies it: the
// charset parameter may list several charsets tried in order, so every one
// must be safe. Without a charset parameter the driver only asks for its
// default (utf8mb4) in the handshake, which a server may ignore
// (skip-character-set-client-handshake) or override (init_connect); argo
// then has the driver send SET NAMES for it on every new connection
// (pinConnectionCharset). An application that runs SET NAMES on a pooled
// connection of the handle OpenDB returned is not seen: keep the client
// charset to the DSN.
//
// A DSN that itself asks for interpolateParams=true or multiStatements=true
// with an unsafe charset is refused by OpenDB: argo would have to either
// drop an explicit setting or run with an injectable connection.

// interpolationSafeCharsets are the connection charsets in which no
// character's encoding holds the byte 0x5c except '\' itself.
var interpolationSafeCharsets = map[string]bool{
	"utf8mb4": true, "utf8": true, "utf8mb3": true,
	"latin1": true, "ascii": true, "binary": true,
}

// defaultConnectionCharset is the charset of the driver's handshake
// collation (utf8mb4_general_ci) when the DSN names neither charset nor
// collation.
const defaultConnectionCharset = "utf8mb4"

// mysqlHandle is what OpenDB decided for a MySQL handle.
type mysqlHandle struct {
	cfg          *mysql.Config
	failoverOpts failover.Options // from argo's DSN parameters (failoverOptions)
	// unsafeCharset says why arguments are not interpolated client-side
	// and no multi-statement pool is opened; "" when they are.
	unsafeCharset string
	noted         sync.Once // the INFO log about unsafeCharset, once per handle
	// failovers are the connectors of a DSN naming several servers (the
	// handle's and its one-trip pool's), whose log lines go to the
	// runtime's logger once one starts on the handle (useLogger).
	failoversMu sync.Mutex
	failovers   []*failover.Connector
}

// addFailover records conn if it is a several-server connector.
func (h *mysqlHandle) addFailover(conn driver.Connector) {
	if fc, ok := conn.(*failover.Connector); ok {
		h.failoversMu.Lock()
		h.failovers = append(h.failovers, fc)
		h.failoversMu.Unlock()
	}
}

// useLogger sends the log lines of db's failover connectors (a DSN naming
// several servers) to log: Config.Logger rather than slog.Default().
func useLogger(log *slog.Logger, db *sql.DB) {
	h := mysqlHandleOf(db)
	if h == nil {
		return
	}
	h.failoversMu.Lock()
	defer h.failoversMu.Unlock()
	for _, fc := range h.failovers {
		fc.SetLogger(log)
	}
}

// mysqlHandles maps each *sql.DB opened by OpenDB on MySQL to its settings.
var mysqlHandles sync.Map // *sql.DB → *mysqlHandle

// mysqlHandleOf returns the settings OpenDB recorded for db, or nil.
func mysqlHandleOf(db *sql.DB) *mysqlHandle {
	if v, ok := mysqlHandles.Load(db); ok {
		return v.(*mysqlHandle)
	}
	return nil
}

// noteClientSide logs once per handle, at INFO, why argo does not
// interpolate arguments on db (nothing when it does, or db is not from
// OpenDB).
func noteClientSide(log *slog.Logger, db *sql.DB) {
	h := mysqlHandleOf(db)
	if h == nil || h.unsafeCharset == "" {
		return
	}
	h.noted.Do(func() {
		log.Info("argo: MySQL arguments sent as server-side prepared statements, finishes in transactions (slower): "+h.unsafeCharset,
			"safe_charsets", "utf8mb4, utf8, utf8mb3, latin1, ascii, binary")
	})
}

// unsafeConnectionCharset returns why the connection charset a MySQL DSN
// sets is not safe for client-side interpolation, or "" when it is. params
// is the DSN's text after the first '?' that follows its last '/'; mc is
// the driver's parse of the same DSN.
func unsafeConnectionCharset(mc *mysql.Config, params string) string {
	var charsets []string
	for kv := range strings.SplitSeq(params, "&") {
		key, value, ok := strings.Cut(kv, "=")
		if ok && key == "charset" { // the driver keeps the last one
			charsets = strings.Split(value, ",")
		}
	}
	for _, cs := range charsets {
		if !interpolationSafeCharsets[charsetName(cs)] {
			return "the DSN's charset " + strings.Join(charsets, ",") + " can run an argument as SQL when interpolated"
		}
	}
	if mc.Collation != "" {
		if cs := collationCharset(mc.Collation); !interpolationSafeCharsets[cs] {
			return "the DSN's collation " + mc.Collation + " (charset " + cs + ") can run an argument as SQL when interpolated"
		}
	}
	for key, value := range mc.Params {
		if why := unsafeSystemVariable(key, value); why != "" {
			return why
		}
	}
	return ""
}

// unsafeSystemVariable judges one system variable a DSN sets on every
// connection (the driver sends "SET key = value" verbatim).
func unsafeSystemVariable(key, value string) string {
	k, v := strings.ToLower(key), strings.ToLower(value)
	if k == "character_set_client" {
		if !interpolationSafeCharsets[charsetName(v)] {
			return "the DSN sets character_set_client=" + value + ", which can run an argument as SQL when interpolated"
		}
		return ""
	}
	if strings.Contains(k, "character_set_client") || strings.Contains(v, "character_set_client") ||
		setsNames.MatchString(k) || setsNames.MatchString(v) {
		return "the DSN's parameter " + key + " may change the client charset"
	}
	return ""
}

// setsNames finds the words of SET NAMES and SET CHARACTER SET (which a
// parameter's text can chain onto its SET: "autocommit=1, NAMES gbk").
var setsNames = regexp.MustCompile(`(^|[^a-z0-9_$])(names|charset|character\s+set|char\s+set)([^a-z0-9_$]|$)`)

// pinConnectionCharset makes the driver send SET NAMES on every new
// connection when the DSN names no charset: the charset of the DSN's
// collation, or utf8mb4_general_ci (the driver's handshake default).
func pinConnectionCharset(mc *mysql.Config, params string) error {
	for kv := range strings.SplitSeq(params, "&") {
		if key, _, _ := strings.Cut(kv, "="); key == "charset" {
			return nil
		}
	}
	collation := mc.Collation
	if collation == "" {
		collation = "utf8mb4_general_ci"
	}
	return mc.Apply(mysql.Charset(collationCharset(collation), collation))
}

// charsetName normalises a charset as SET NAMES reads it.
func charsetName(s string) string {
	return strings.ToLower(strings.Trim(s, " '\"`"))
}

// collationCharset returns the charset of a collation named the MySQL way
// (charset_suffix, or "binary").
func collationCharset(collation string) string {
	c := charsetName(collation)
	if c == "binary" {
		return c
	}
	cs, _, _ := strings.Cut(c, "_")
	return cs
}
