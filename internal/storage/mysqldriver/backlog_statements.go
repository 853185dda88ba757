package mysqldriver

import "github.com/argo-retry/argo/internal/storage"

// The backlog statements (storage/backlog.go), added to statements in init.
// The due counts read idx_state_name (task_status, task_id, tenant,
// execute_time, migration 000011) alone: one range per claimable state,
// no row read; the held retries read the range (retrying, lease_until >
// now) of idx_lease, at most the retries the instances hold.
func init() {
	// The held retries are a range of idx_lease: the planner would otherwise take idx_state_name's ref on retrying and read every retrying row, held or not.
	heldIndex := " FORCE INDEX (idx_lease)"
	claimable := storage.StateSet(storage.StatePending, storage.StateRetrying, storage.StateExhausted)
	due := " FROM argo_task WHERE task_status IN " + claimable + " AND execute_time <= ?"
	statements.BacklogDueByTask = "SELECT task_id AS name, COUNT(*) AS n, MIN(execute_time) AS oldest" + due + " GROUP BY task_id"
	statements.BacklogDueByTenant = "SELECT tenant AS name, COUNT(*) AS n, MIN(execute_time) AS oldest" + due + " GROUP BY tenant ORDER BY n DESC, tenant LIMIT ?"
	statements.BacklogHeld = "SELECT task_id, tenant, COUNT(*) AS n FROM argo_task" + heldIndex + " WHERE task_status = " + retrying + " AND lease_until > ? GROUP BY task_id, tenant"
}
