package mysqldriver

// The tenant statements (storage/tenants.go), added to statements in init.
// Both read through idx_tenant_state (tenant, task_status), migration 000009.
func init() {
	statements.DeadLettersByTenant = "SELECT tenant, COUNT(*) AS n FROM argo_task WHERE task_status = " + dead + " AND requeued_to IS NULL GROUP BY tenant ORDER BY tenant"
	statements.CountByStateOfTenant = "SELECT task_status, COUNT(*) AS n FROM argo_task WHERE tenant = ? GROUP BY task_status"
}
