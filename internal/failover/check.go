package failover

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The health check, on one connection: two statements that MySQL, MariaDB
// and Galera (MariaDB Galera, Percona XtraDB Cluster) all accept. SHOW with
// a WHERE clause, not SELECT @@wsrep_on, which plain MySQL refuses as an
// unknown variable.
const (
	checkVariables = "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('read_only', 'wsrep_on')"
	checkWsrep     = "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_cluster_status', 'wsrep_local_state', 'wsrep_local_state_comment')"
)

// wsrepSynced is wsrep_local_state of a node that is synced with its
// cluster (1 joining, 2 donor or desynced, 3 joined, 4 synced).
const wsrepSynced = "4"

// checkServer runs the health check on dc. why is not empty when the server
// answered but is not usable (read-only, or a Galera node not ready, not
// synced or outside the primary component); err is set when the check
// could not run (the connection or a statement failed).
func checkServer(ctx context.Context, dc fullConn) (why string, err error) {
	vars, err := showValues(ctx, dc, checkVariables)
	if err != nil {
		return "", err
	}
	if v, ok := vars["read_only"]; !ok {
		return "", errors.New("health check: the server did not report read_only")
	} else if isOn(v) {
		return "read-only (read_only=" + v + ")", nil
	}
	if !isOn(vars["wsrep_on"]) {
		return "", nil // not a Galera node
	}
	status, err := showValues(ctx, dc, checkWsrep)
	if err != nil {
		return "", err
	}
	return galeraUnusable(status), nil
}

// galeraUnusable returns why a Galera node with this wsrep status may not
// take writes, or "" when it may.
func galeraUnusable(status map[string]string) string {
	state := status["wsrep_local_state"]
	if c := status["wsrep_local_state_comment"]; c != "" {
		state += " (" + c + ")"
	}
	switch {
	case !isOn(status["wsrep_ready"]):
		return "Galera node not ready (wsrep_ready=" + status["wsrep_ready"] + ")"
	case status["wsrep_cluster_status"] != "Primary":
		return "Galera node outside the primary component (wsrep_cluster_status=" + status["wsrep_cluster_status"] + ")"
	case status["wsrep_local_state"] != wsrepSynced:
		return "Galera node not synced (wsrep_local_state=" + state + ")"
	}
	return ""
}

func isOn(v string) bool {
	return strings.EqualFold(v, "ON") || v == "1"
}

// showValues runs a SHOW … statement of (name, value) rows and returns the
// values by name.
func showValues(ctx context.Context, dc fullConn, query string) (map[string]string, error) {
	rows, err := dc.QueryContext(ctx, query, nil)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if n := len(rows.Columns()); n != 2 {
		return nil, fmt.Errorf("health check: %d columns from %q", n, query)
	}
	values := map[string]string{}
	row := make([]driver.Value, 2)
	for {
		if err := rows.Next(row); err == io.EOF {
			return values, nil
		} else if err != nil {
			return nil, err
		}
		values[strings.ToLower(text(row[0]))] = text(row[1])
	}
}

func text(v driver.Value) string {
	switch v := v.(type) {
	case []byte:
		return string(v)
	case string:
		return v
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}
