package sqlitedriver

import "github.com/argo-retry/argo/internal/storage"

// The console's reads (storage/console_reads.go, storage/overview.go),
// added to statements in init. Each reads a bounded range of an index:
// see docs/schema.md (migration 000011).
func init() {
	unpurged := storage.StateSet(storage.UnpurgedStates...)
	closed := storage.StateSet(storage.StateSucceeded, storage.StateRecovered, storage.StateDead)
	// Fail while an index of 000011 is missing (an index the statement
	// names that does not exist is an error, raised before any row).
	statements.SchemaProbes = append(statements.SchemaProbes,
		storage.SchemaProbe{Migration: "000011_console_reads.up.sql", Query: "SELECT id FROM argo_task INDEXED BY idx_state_name WHERE 1=0"},
		storage.SchemaProbe{Migration: "000011_console_reads.up.sql", Query: "SELECT id FROM argo_task_attempt INDEXED BY idx_attempt_finished WHERE 1=0"})
	statements.CountTasksUpTo = func(where string) string {
		return "SELECT COUNT(*) FROM (SELECT 1 FROM argo_task WHERE " + where + " LIMIT ?) AS bounded"
	}
	statements.TaskNamesContaining = "SELECT DISTINCT task_id FROM argo_task WHERE LOWER(task_id) LIKE ? ESCAPE '!' ORDER BY task_id"
	statements.OverviewCounts = "SELECT task_id, tenant, task_status, COUNT(*) AS n FROM argo_task WHERE task_status IN " + unpurged + " GROUP BY task_status, task_id, tenant"
	statements.OverviewRecentCounts = "SELECT task_id, tenant, task_status, COUNT(*) AS n FROM argo_task WHERE task_status IN " + purgeable + " AND gmt_modified >= ? GROUP BY task_status, task_id, tenant"
	statements.OverviewFinishedBuckets = "SELECT (gmt_modified - ?) / ? AS b, task_status, COUNT(*) AS n" +
		" FROM argo_task WHERE task_status IN " + closed + " AND gmt_modified >= ? GROUP BY b, task_status"
	statements.OverviewFailedAttemptBuckets = "SELECT (finished_at - ?) / ? AS b, COUNT(*) AS n, SUM(CASE WHEN attempt > 1 THEN 1 ELSE 0 END) AS retried" +
		" FROM argo_task_attempt WHERE kind = 'attempt' AND outcome <> ? AND finished_at >= ? GROUP BY b"
	statements.OverviewFailedRetryLateness = "SELECT a.started_at AS started, a.started_at - (p.finished_at + p.backoff_ms) AS late_ms, a.finished_at AS ended" +
		" FROM argo_task_attempt a JOIN argo_task_attempt p ON p.task_pk = a.task_pk AND p.attempt = a.attempt - 1 AND p.kind = 'attempt'" +
		" WHERE a.kind = 'attempt' AND a.attempt > 1 AND a.finished_at >= ? ORDER BY a.finished_at DESC LIMIT ?"
	statements.OverviewSucceededRetryLateness = "SELECT t.attempt_started_at AS started, t.attempt_started_at - (p.finished_at + p.backoff_ms) AS late_ms, t.gmt_modified AS ended" +
		" FROM argo_task t JOIN argo_task_attempt p ON p.task_pk = t.id AND p.attempt = t.execute_times - 1 AND p.kind = 'attempt'" +
		" WHERE t.task_status = " + succeeded + " AND t.gmt_modified >= ? AND t.execute_times > 1 AND t.attempt_started_at > 0 ORDER BY t.gmt_modified DESC LIMIT ?"
	statements.OverviewDeadGrowth = "SELECT task_id, tenant, COUNT(*) AS n FROM argo_task WHERE task_status = " + dead + " AND gmt_modified >= ? GROUP BY task_id, tenant ORDER BY task_id, tenant"
	statements.OverviewInstances = "SELECT instance_id, heartbeat_at, started_at, task_names FROM argo_instance ORDER BY instance_id"
	statements.OverviewHolds = "SELECT lease_owner, COUNT(*) AS n FROM argo_task WHERE task_status IN " + waiting + " AND lease_until > ? GROUP BY lease_owner"
	statements.OverviewNameDue = "SELECT COUNT(*) FROM (SELECT 1 FROM argo_task WHERE task_id = ? AND task_status IN " + claimable + " AND execute_time <= ? LIMIT 1) AS due"
}
