package runtime

import (
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MySQLIdleTimeoutDefault is the wait_timeout argo sets on its MySQL
// sessions unless the DSN sets one: how long the server keeps a session
// whose client sends nothing, inside a transaction or not, before it
// closes it and rolls back what it held.
//
// Why argo sets it: a session whose client stops talking in the middle of
// a transaction — the process froze, or the network lost the answer of
// one statement and the client gave up on the connection while the
// server's side stayed open — keeps its row locks. With MySQL's default
// (8 hours) one dependent submit cut off after its INSERT held its
// upstream task's row for the rest of a fault-checker run: that task's
// finish, the rescue of its lease, and every batch of finishes or rescues
// that touched it waited (innodb_lock_wait_timeout, 50 s, then again) and
// the calls of an order key behind it never started. With this bound such
// locks go within a minute. argo's own transactions never wait on their
// client between statements; a transaction of yours run on argo's handle
// (Runtime.DB) must not sit idle longer, or set wait_timeout= in the DSN.
const MySQLIdleTimeoutDefault = 60 * time.Second

// idleTimeoutParam is the session variable MySQLIdleTimeoutDefault sets.
const idleTimeoutParam = "wait_timeout"

// applyIdleTimeout makes mc's connections set wait_timeout (the DSN's own
// value, else MySQLIdleTimeoutDefault) and returns it; a value that is not
// a whole number of seconds from 1 is refused with what to write.
func applyIdleTimeout(mc *mysql.Config) (time.Duration, error) {
	if v, ok := mc.Params[idleTimeoutParam]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("wait_timeout=%s: write a whole number of seconds from 1 (argo's default when it is left out: %d)", v, int(MySQLIdleTimeoutDefault.Seconds()))
		}
		return time.Duration(n) * time.Second, nil
	}
	if mc.Params == nil {
		mc.Params = map[string]string{}
	}
	mc.Params[idleTimeoutParam] = strconv.Itoa(int(MySQLIdleTimeoutDefault.Seconds()))
	return MySQLIdleTimeoutDefault, nil
}

// closeIdleBefore makes db close a connection left idle for half the
// server's wait_timeout, so that the pool never hands out one the server
// has closed.
func closeIdleBefore(db *sql.DB, idle time.Duration) {
	db.SetConnMaxIdleTime(max(idle/2, time.Second))
}
