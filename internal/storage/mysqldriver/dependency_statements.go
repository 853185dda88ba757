package mysqldriver

import (
	"strconv"
	"strings"

	"github.com/argo-retry/argo/internal/storage"
)

// The dependency statements (storage/dependencies.go, migration 000007),
// added to statements in init.
func init() {
	blocked := storage.StateValue(storage.StateBlocked)
	skipped := storage.StateValue(storage.StateSkipped)
	ok := strconv.Itoa(storage.UpstreamSucceeded)
	failed := strconv.Itoa(storage.UpstreamFailed)
	d := statements
	d.DepUpstreamStates = func(n int) string {
		// FOR UPDATE: a finish of an upstream task waits for the submit, then
		// its DependencySteps see the new edges.
		return "SELECT id, task_status FROM argo_task WHERE id IN " + storage.Placeholders(n) + " FOR UPDATE"
	}
	d.InsertDeps = func(n int) string {
		return "INSERT INTO argo_task_dep (task_pk, upstream_pk, upstream_outcome, created_at) VALUES " +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?), ", n), ", ")
	}
	d.DepRecordOutcome = "UPDATE argo_task_dep SET upstream_outcome = ? WHERE upstream_pk = ? AND upstream_outcome = 0" +
		" AND EXISTS (SELECT 1 FROM argo_task WHERE id = ? AND task_status = ?)"
	// Multi-table UPDATE driven by idx_dep_upstream: a task without
	// downstream tasks costs one empty index range. (MySQL refuses a
	// subquery on argo_task here: the NOT EXISTS reads the edges only.)
	// It writes every blocked task downstream of the settled edge, released
	// or not (gmt_modified always changes): two settles of one task's
	// upstream tasks then write the same row, so on a multi-writer Galera
	// cluster, where neither sees the other's edge (locks are local to a
	// node), certification rolls one back and its retry reads the other's
	// edge settled. Without that write both commit and neither releases the
	// task (a write skew; issue #22).
	d.DepRelease = "UPDATE argo_task t JOIN argo_task_dep e ON e.task_pk = t.id SET t.task_status = CASE WHEN NOT EXISTS (SELECT 1 FROM argo_task_dep d WHERE d.task_pk = t.id AND d.upstream_outcome <> " + ok + ")" +
		" THEN " + storage.StateValue(storage.StatePending) + " ELSE " + blocked + " END, t.gmt_modified = GREATEST(t.gmt_modified + 1, ?)" +
		" WHERE e.upstream_pk = ? AND e.upstream_outcome = " + ok + " AND t.task_status = " + blocked
	d.DepSkip = "UPDATE argo_task t JOIN (WITH RECURSIVE down (id) AS (SELECT task_pk FROM argo_task_dep WHERE upstream_pk = ? AND upstream_outcome = " + failed +
		" UNION SELECT d.task_pk FROM argo_task_dep d JOIN down ON d.upstream_pk = down.id) SELECT id FROM down) x ON x.id = t.id" +
		" SET t.task_status = " + skipped + ", t.error_msg = ?, t.gmt_modified = ? WHERE t.task_status = " + blocked
	d.DepUpstream = "SELECT e.upstream_pk AS other, COALESCE(t.task_status, -1) AS task_status, e.upstream_outcome FROM argo_task_dep e LEFT JOIN argo_task t ON t.id = e.upstream_pk WHERE e.task_pk = ? ORDER BY e.upstream_pk"
	d.DepDownstream = "SELECT e.task_pk AS other, COALESCE(t.task_status, -1) AS task_status, e.upstream_outcome FROM argo_task_dep e LEFT JOIN argo_task t ON t.id = e.task_pk WHERE e.upstream_pk = ? ORDER BY e.task_pk"
	d.DeleteDeps = func(n int) string {
		return "DELETE FROM argo_task_dep WHERE task_pk IN " + storage.Placeholders(n) + " OR upstream_pk IN " + storage.Placeholders(n)
	}
	d.DepDownstreamClosure = "WITH RECURSIVE down (id) AS (SELECT task_pk FROM argo_task_dep WHERE upstream_pk = ?" +
		" UNION SELECT d.task_pk FROM argo_task_dep d JOIN down ON d.upstream_pk = down.id)" +
		" SELECT t.id, t.task_status FROM argo_task t JOIN down ON down.id = t.id ORDER BY t.id"
	d.DepEdgesOf = func(n int) string {
		return "SELECT e.task_pk, e.upstream_pk, e.upstream_outcome, COALESCE(u.task_status, -1) AS task_status FROM argo_task_dep e LEFT JOIN argo_task u ON u.id = e.upstream_pk WHERE e.task_pk IN " + storage.Placeholders(n)
	}
	d.DepRepoint = func(n int) string {
		return "UPDATE argo_task_dep SET upstream_pk = ?, upstream_outcome = 0 WHERE upstream_pk = ? AND task_pk IN " + storage.Placeholders(n)
	}
	d.DepUnskip = func(n int) string {
		return "UPDATE argo_task SET task_status = " + blocked + ", error_msg = '', gmt_modified = ? WHERE task_status = " + skipped + " AND id IN " + storage.Placeholders(n)
	}
	statements.SchemaProbes = append(statements.SchemaProbes, storage.SchemaProbe{Migration: "000007_task_dependencies.up.sql", Query: "SELECT task_pk, upstream_pk, upstream_outcome, created_at FROM argo_task_dep WHERE 1=0"})
}
