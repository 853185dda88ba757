package runtime

import (
	"database/sql"

	"github.com/argo-retry/argo/internal/failover"
)

// openOnetrip opens the multi-statement pool of a MySQL handle from OpenDB
// (storage.Options.OpenMultiStatement): nil for another handle, or where
// client-side interpolation is not safe (dsn_charset.go): a multi-statement
// query in a charset such as GBK lets an argument run as SQL.
func openOnetrip(db *sql.DB) *sql.DB {
	h := mysqlHandleOf(db)
	if h == nil || h.unsafeCharset != "" || !h.cfg.InterpolateParams {
		return nil
	}
	mc := h.cfg.Clone()
	mc.MultiStatements = true
	conn, err := failover.NewConnector(mc, h.failoverOpts)
	if err != nil {
		return nil
	}
	h.addFailover(conn)
	multi := sql.OpenDB(redactingConnector{Connector: conn, password: mc.Passwd})
	multi.SetMaxOpenConns(16)
	multi.SetMaxIdleConns(16)
	if idle, err := applyIdleTimeout(mc); err == nil { // the handle's own value, set by OpenDB
		closeIdleBefore(multi, idle)
	}
	return multi
}
