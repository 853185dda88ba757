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
// unknown variable (a variable the server lacks, such as super_read_only on
// MariaDB, is simply not in the answer).
const (
	checkVariables = "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('read_only', 'super_read_only', 'innodb_read_only', 'wsrep_on')"
	checkWsrep     = "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_cluster_status', 'wsrep_local_state', 'wsrep_local_state_comment', 'wsrep_gcomm_uuid', 'wsrep_local_index')"
)

// readOnlyFlags are the settings by which a server says it takes no writes
// from its clients: read_only (MySQL, MariaDB), super_read_only (MySQL: not
// even from SUPER accounts) and innodb_read_only (a server started
// read-only, as an Aurora reader is). Any of them ON makes it unusable.
var readOnlyFlags = []string{"read_only", "super_read_only", "innodb_read_only"}

// wsrepSynced is wsrep_local_state of a node that is synced with its
// cluster (1 joining, 2 donor or desynced, 3 joined, 4 synced).
const wsrepSynced = "4"

// report is what a health check found.
type report struct {
	why    string // why the server may not take writes; "" when it may
	galera bool   // wsrep_on = ON
	rank   string // Galera: the node's rank in the writer election (galeraRank)
}

// checkServer runs the health check on dc. why is not empty when the server
// answered but is not usable (read-only, or a Galera node not ready, not
// synced or outside the primary component); err is set when the check
// could not run (the connection or a statement failed).
func checkServer(ctx context.Context, dc fullConn) (why string, err error) {
	r, err := checkReport(ctx, dc)
	return r.why, err
}

// checkReport is checkServer with what else the check found.
func checkReport(ctx context.Context, dc fullConn) (report, error) {
	vars, err := showValues(ctx, dc, checkVariables)
	if err != nil {
		return report{}, err
	}
	if _, ok := vars["read_only"]; !ok {
		return report{}, errors.New("health check: the server did not report read_only")
	}
	if why := readOnlyReason(vars); why != "" {
		return report{why: why}, nil
	}
	if !isOn(vars["wsrep_on"]) {
		return report{}, nil // not a Galera node
	}
	status, err := showValues(ctx, dc, checkWsrep)
	if err != nil {
		return report{galera: true}, err
	}
	return report{why: galeraUnusable(status), galera: true, rank: galeraRank(status)}, nil
}

// readOnlyReason returns why a server with these variables takes no
// writes (one of readOnlyFlags is ON), or "".
func readOnlyReason(vars map[string]string) string {
	for _, flag := range readOnlyFlags {
		if v := vars[flag]; isOn(v) {
			return "read-only (" + flag + "=" + v + ")"
		}
	}
	return ""
}

// galeraRank is the key by which the Galera writer is elected: the lowest
// wins. It is the node's wsrep_gcomm_uuid, by which Galera orders the
// members of a view (wsrep_local_index is the position in that order), so
// the lowest uuid among the Synced nodes of the primary component is the
// member with the lowest wsrep_local_index among them; unlike the index, the
// uuid does not depend on which view a node has installed yet, so two
// clients that check the nodes a moment apart across a view change still
// rank them alike. A node that reports no uuid ranks by its index, after
// every node that does.
func galeraRank(status map[string]string) string {
	if u := strings.ToLower(status["wsrep_gcomm_uuid"]); u != "" {
		return "0:" + u
	}
	return fmt.Sprintf("1:%010s", status["wsrep_local_index"])
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
