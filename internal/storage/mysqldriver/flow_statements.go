package mysqldriver

import (
	"strings"

	"github.com/argo-retry/argo/internal/storage"
)

// The flow-control statements (storage/flow.go), added to statements in init.
func init() {
	// INSERT IGNORE: strict mode would turn nothing here into an error; the
	// only thing ignored is the duplicate key.
	statements.FlowInsert = "INSERT IGNORE INTO argo_flow (group_name, members) VALUES (?, '')"
	statements.FlowLockRead = "SELECT " + storage.FlowColumns + ", " + storage.FlowBudgetColumns + ", " + storage.FlowGrantColumns + " FROM argo_flow WHERE group_name = ? FOR UPDATE"
	statements.FlowWrite = "UPDATE argo_flow SET lock_seq = lock_seq + 1, members = ?, tokens = ?, refilled_at = ?, breaker_state = ?, breaker_until = ?, cooldown_ms = ?, probe_task = ?, window_start = ?, window_ok = ?, window_failed = ?, closed_at = ?, opened_count = ?, updated_at = ?, budget_start = ?, budget_firsts = ?, budget_retries = ?, grants = ? WHERE group_name = ?"
	statements.FlowGroups = "SELECT " + storage.FlowColumns + ", " + storage.FlowBudgetColumns + ", " + storage.FlowGrantColumns + " FROM argo_flow ORDER BY group_name"
	statements.FlowRunning = func(n int) string {
		// idx_lease (task_status, lease_until): one range over the running
		// rows, which are at most the cluster's workers. Forced: after a
		// group's tasks have churned, MariaDB chose to read every row of the
		// names (every retained succeeded row, on every gated claim;
		// TestFlowRunningCountReadsOnlyRunningRows).
		return "SELECT COUNT(*) FROM argo_task FORCE INDEX (idx_lease) WHERE task_status = " + running + " AND task_id IN " + storage.Placeholders(n)
	}
	statements.FlowCandidates = func(states, scope string) string {
		return "SELECT " + taskColumns + " FROM argo_task WHERE " + ClaimDue + " AND task_status IN " + states + " AND " + scope + " ORDER BY due_at LIMIT ?"
	}
	statements.FlowCandidatesCounted = func(states, scope string, n int) string {
		// The subquery names no column of the outer rows: it runs once.
		return "SELECT " + taskColumns + ", (" + statements.FlowRunning(n) + ") AS flow_running" +
			strings.TrimPrefix(statements.FlowCandidates(states, scope), "SELECT "+taskColumns)
	}
	statements.FlowDue = func(states, scope string) string {
		return "SELECT id FROM argo_task WHERE " + ClaimDue + " AND task_status IN " + states + " AND " + scope + " ORDER BY due_at LIMIT ?"
	}
	statements.FlowTakeAll = func(n int) string {
		return "UPDATE " + byID + " SET " + claimSet + " WHERE id IN " + storage.Placeholders(n) + " AND shard_key IN " + storage.Placeholders(n) +
			" AND (" + strings.TrimSuffix(strings.Repeat("(id = ? AND task_status = ? AND execute_times = ?) OR ", n), " OR ") + ") AND execute_time <= ? AND lease_until <= ?"
	}
	statements.SchemaProbes = append(statements.SchemaProbes, storage.SchemaProbe{Migration: "000006_flow_control.up.sql", Query: "SELECT " + storage.FlowColumns + " FROM argo_flow WHERE 1=0"},
		storage.SchemaProbe{Migration: "000010_retry_budget.up.sql", Query: "SELECT " + storage.FlowBudgetColumns + " FROM argo_flow WHERE 1=0"},
		storage.SchemaProbe{Migration: "000013_flow_grants.up.sql", Query: "SELECT grants FROM argo_flow WHERE 1=0"},
		storage.SchemaProbe{Migration: "000014_breaker_trail.up.sql", Query: "SELECT flow_group FROM argo_operator_action WHERE 1=0"})
}
