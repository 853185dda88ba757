package sqlitedriver

import (
	"strings"

	"github.com/argo-retry/argo/internal/storage"
)

// byID names argo_task for a statement by primary key (SQLite's planner
// takes the primary key by itself).
const byID = "argo_task"

// taskColumns is the column list of argo_task in Task's field order.
const taskColumns = storage.TaskColumns

// attemptColumns are the columns of an argo_task_attempt row argo writes.
const attemptColumns = "task_pk, attempt, kind, worker, started_at, finished_at, outcome, error_msg, backoff_ms"

// attemptRowColumns are attemptColumns, the attempt's last progress
// (migration 000019), its error code (000021) and its move and trace id
// (000024): the columns argo writes and reads.
const attemptRowColumns = attemptColumns + ", progress, progress_note, progress_at, error_code, from_state, to_state, trace_id"

// The state sets the statements name (storage's sets, rendered).
var (
	claimable   = storage.StateSet(storage.ClaimableStates...)
	leased      = storage.StateSet(storage.LeasedStates...)
	waiting     = storage.StateSet(storage.WaitingStates...)
	purgeable   = storage.StateSet(storage.PurgeableStates...)
	finished    = storage.StateSet(storage.FinishedStates...)
	requeueable = storage.StateSet(storage.RequeueableStates...)
	discardable = storage.StateSet(storage.DiscardableStates...)

	pending     = storage.StateValue(storage.StatePending)
	running     = storage.StateValue(storage.StateRunning)
	retrying    = storage.StateValue(storage.StateRetrying)
	succeeded   = storage.StateValue(storage.StateSucceeded)
	exhausted   = storage.StateValue(storage.StateExhausted)
	fallingBack = storage.StateValue(storage.StateFallingBack)
	dead        = storage.StateValue(storage.StateDead)
	discarded   = storage.StateValue(storage.StateDiscarded)
)

// InsertTask writes a task row with its submit token (Statements.InsertTask).
const InsertTask = `INSERT INTO argo_task (task_id, task_status, execute_times, max_attempts, execute_time, parameter_types, method_name, method_sign_name, execute_interval_sec, delay_time, task_parameter, performance_way, thread_way, error_msg, alert_expression, alert_action_bean_name, fallback_class_name, fallback_error_msg, shard_key, retry_policy, lease_owner, lease_until, unique_key, discard_reason, gmt_create, gmt_modified, tenant, trace_parent, order_key, submit_token) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// claimSet is the SET clause of every claim: a due attempt becomes running
// with one more execute_times; an exhausted task becomes falling_back.
// (SQLite evaluates every SET expression on the row as it was.)
var claimSet = "execute_times = CASE WHEN task_status = " + exhausted + " THEN execute_times ELSE execute_times + 1 END, task_status = CASE WHEN task_status = " + exhausted + " THEN " + fallingBack + " ELSE " + running + " END, lease_owner = ?, lease_until = ?, gmt_modified = ?"

// ClaimDue is the claim's condition on a row's due time: claimable, due by
// a time, lease ended by now (a held retry is its owner's until its hold
// ends). Arguments due by, now.
var ClaimDue = "task_status IN " + claimable + " AND execute_time <= ? AND lease_until <= ?"

// limitArg is the LIMIT of the statements argo runs often (claims, flow
// candidates, the maintenance sweeps): "LIMIT +?", not "LIMIT ?". SQLite
// (3.54, as modernc.org/sqlite v1.61.1 embeds it) reads the bound value of
// a bare "LIMIT ?" while planning, and so marks the statement to be planned
// again each time that parameter is bound: every call parsed it twice
// (sqlite3_step re-prepares it), a statement the connection keeps prepared
// included. "+?" is the same value, which the planner does not read; the
// plans stay the same (TestLimitArgKeepsThePlan,
// TestHotStatementsNotReprepared).
const limitArg = " LIMIT +?"

// Claim is the whole claim, one UPDATE … RETURNING (run in a BEGIN
// IMMEDIATE transaction): arguments owner, lease_until, now (the claim's
// SET), due by, now, scope's, limit. The partial index idx_claim_due holds
// exactly the claimable rows by execute_time; SQLite's planner ignores a
// partial index without ANALYZE statistics, so the claim names it.
func Claim(scope string) string {
	return "UPDATE argo_task SET " + claimSet + " WHERE id IN (SELECT id FROM argo_task INDEXED BY idx_claim_due WHERE " + ClaimDue + " AND " + scope + " AND " + OrderGate + " ORDER BY execute_time" + limitArg + ") RETURNING " + taskColumns
}

// OrderGate admits a row without an order key, or a keyed row no earlier
// row of whose key is unfinished (storage/order.go): one range of the
// partial index idx_order_open, whose condition the subquery repeats.
// The claim puts it after its scope: rows of other names are left before
// the gate is looked at (before the scope, it slowed the SQLite claim
// enough to bunch a flow group's starts in TestFlowBreakerOutage).
var OrderGate = "(order_key IS NULL OR NOT EXISTS (SELECT 1 FROM argo_task AS ahead INDEXED BY idx_order_open WHERE ahead.order_key = argo_task.order_key AND ahead.order_key IS NOT NULL AND ahead.task_status IN " + storage.StateSet(storage.OrderHoldingStates...) + " AND ahead.id < argo_task.id))"

// ClaimTake takes one candidate still as read (Statements.ClaimTake; the
// SQLite claim itself takes no candidates).
var ClaimTake = "UPDATE " + byID + " SET " + claimSet + " WHERE id = ? AND shard_key = ? AND task_status = ? AND execute_times = ? AND execute_time <= ? AND lease_until <= ?"

// fence is the WHERE of a fenced finish: the lease the write must still hold.
const fence = " WHERE id = ? AND shard_key = ? AND task_status = ? AND lease_owner = ? AND execute_times = ?"

// FinishUpdate is the fenced UPDATE of one finish (Statements.FinishUpdate).
func FinishUpdate(set string) string { return "UPDATE " + byID + " SET " + set + fence }

// ExtendLeases renews n leases (Statements.ExtendLeases): only rows still
// leased by the owner at the same attempt.
func ExtendLeases(n int) string {
	return "UPDATE " + byID + " SET lease_until = MAX(lease_until, ?) WHERE lease_owner = ? AND task_status IN " + leased + " AND id IN " + storage.Placeholders(n) + " AND shard_key IN " + storage.Placeholders(n) +
		" AND (" + strings.TrimSuffix(strings.Repeat("(id = ? AND execute_times = ?) OR ", n), " OR ") + ")"
}

func inIDs(n int) string { return storage.Placeholders(n) }

// statements is every statement argo runs on SQLite.
var statements = &storage.Statements{
	InsertTask:          InsertTask,
	TaskIDByUniqueKey:   "SELECT id FROM argo_task WHERE task_id = ? AND unique_key = ?",
	TaskIDBySubmitToken: "SELECT id FROM argo_task WHERE submit_token = ?",
	DeleteBySubmitToken: "DELETE FROM argo_task WHERE submit_token = ?",
	GetTask:             "SELECT " + taskColumns + " FROM argo_task WHERE id = ?",
	GetTaskOnShard:      "SELECT " + taskColumns + " FROM argo_task WHERE id = ? AND shard_key = ?",
	TaskState:           "SELECT task_status FROM argo_task WHERE id = ?",
	TaskAttempts:        "SELECT id, " + attemptRowColumns + " FROM argo_task_attempt WHERE task_pk = ? ORDER BY id",
	AttemptOnTaskRow:    "SELECT task_status, execute_times, attempt_started_at, attempt_worker, gmt_modified, progress, progress_note, progress_at, progress_attempt FROM argo_task WHERE id = ?",
	InsertAttempts: func(n int) string {
		return "INSERT INTO argo_task_attempt (" + attemptRowColumns + ") VALUES " + strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", n), ", ")
	},

	CountRefusedTransition: "INSERT INTO argo_refused_transition (source, from_state, to_state, refused) VALUES (?, ?, ?, 1) ON CONFLICT (source, from_state, to_state) DO UPDATE SET refused = refused + 1",
	RefusedTransitions:     "SELECT source, from_state, to_state, refused FROM argo_refused_transition ORDER BY source, from_state, to_state",
	ClaimDueColumn:         "execute_time",
	ClaimByID:              "UPDATE " + byID + " SET " + claimSet + " WHERE id = ? AND shard_key = ? AND task_status = ? AND execute_time <= ? AND lease_until <= ?",
	ClaimSubmitted:         "UPDATE " + byID + " SET " + claimSet + " WHERE id = ? AND shard_key = ? AND submit_token = ? AND task_status = " + pending + " AND order_key IS NULL AND execute_time <= ? AND lease_until <= ?",
	ClaimTake:              ClaimTake,

	FinishUpdate: FinishUpdate,
	Rescue:       "UPDATE " + byID + " SET task_status = ?, execute_time = ?, error_msg = ?, lease_owner = '', lease_until = 0, gmt_modified = ?" + fence + " AND lease_until = ?",
	ExtendLeases: ExtendLeases,
	ExtendLeasesProgress: func(n, p int) string {
		return storage.ExtendLeasesProgress(ExtendLeases(n), p)
	},
	LeaseHolders: func(n int) string {
		return "SELECT id, shard_key, execute_times, lease_owner, task_status FROM argo_task WHERE id IN " + inIDs(n) + " AND shard_key IN " + inIDs(n)
	},
	ConfirmSubmitLease: "UPDATE " + byID + " SET lease_until = ? WHERE id = ? AND shard_key = ? AND task_status = " + running + " AND lease_owner = ? AND execute_times = 1 AND attempt_started_at = 0",
	SubmitLeaseHeld:    "SELECT COUNT(*) FROM argo_task WHERE id = ? AND shard_key = ? AND task_status = " + running + " AND lease_owner = ? AND execute_times = 1 AND attempt_started_at = 0 AND lease_until = ?",
	StartHeld:          "UPDATE " + byID + " SET execute_times = execute_times + 1, task_status = " + running + ", lease_until = ?, gmt_modified = ? WHERE id = ? AND shard_key = ? AND task_status = ? AND lease_owner = ? AND execute_times = ? AND lease_until = ?",
	HeldStartStates: func(n int) string {
		return "SELECT id, task_status, lease_owner, execute_times, lease_until, gmt_modified FROM argo_task WHERE id IN " + inIDs(n) + " AND shard_key IN " + inIDs(n)
	},
	ReleaseHolds: func(n int) string {
		return "UPDATE " + byID + " SET lease_owner = '', lease_until = 0 WHERE task_status IN " + waiting + " AND lease_owner = ? AND id IN " + inIDs(n) + " AND shard_key IN " + inIDs(n)
	},
	DeadHolds: "SELECT lease_owner, COUNT(*) AS tasks, MAX(lease_until) AS until_ms FROM argo_task" +
		" WHERE task_status IN " + waiting + " AND lease_until > ?" +
		" AND lease_owner NOT IN (SELECT instance_id FROM argo_instance WHERE heartbeat_at >= ? AND instance_id <> ?)" +
		" GROUP BY lease_owner ORDER BY lease_owner",
	AttemptRecorded: "SELECT COUNT(*) FROM argo_task_attempt WHERE task_pk = ? AND attempt = ? AND kind = ? AND worker = ? AND started_at = ? AND finished_at = ? AND outcome = ?",

	OrphanCandidates: func(known int) string {
		q := "SELECT id, shard_key, task_id FROM argo_task WHERE task_status IN " + claimable + " AND execute_time <= ? AND error_msg NOT LIKE ?"
		if known > 0 {
			q += " AND task_id NOT IN " + storage.Placeholders(known)
		}
		return q + limitArg
	},
	FlagOrphan:    "UPDATE " + byID + " SET error_msg = ? WHERE id = ? AND shard_key = ? AND task_status IN " + claimable + " AND task_id = ?",
	ExpiredLeases: "SELECT " + taskColumns + " FROM argo_task WHERE task_status IN " + leased + " AND lease_until < ? ORDER BY lease_until" + limitArg,

	Discard: "UPDATE " + byID + " SET task_status = " + discarded + ", discard_reason = ?, lease_owner = '', lease_until = 0, gmt_modified = ? WHERE id = ? AND task_status IN " + discardable + " AND requeued_to IS NULL",
	Cancel:  "UPDATE " + byID + " SET task_status = " + discarded + ", discard_reason = ?, lease_owner = '', lease_until = 0, gmt_modified = ? WHERE id = ? AND shard_key = ? AND task_status = ? AND lease_owner = ? AND execute_times = ? AND requeued_to IS NULL",

	PurgeCandidates: "SELECT id, shard_key FROM argo_task WHERE " + purgeableRow + " AND gmt_modified < ?" + limitArg,
	// No lock clause: the BEGIN IMMEDIATE transaction already excludes
	// every other writer until the DELETEs.
	PurgeLock: func(n int) string {
		return "SELECT id, shard_key FROM argo_task WHERE " + purgeableRow + " AND gmt_modified < ? AND id IN " + inIDs(n) + " AND shard_key IN " + inIDs(n)
	},
	DeleteTasks: func(n int) string {
		return "DELETE FROM argo_task WHERE id IN " + inIDs(n) + " AND shard_key IN " + inIDs(n)
	},
	DeleteAttempts: func(n int) string { return "DELETE FROM argo_task_attempt WHERE task_pk IN " + inIDs(n) },

	UpdateInstance: "UPDATE argo_instance SET heartbeat_at = ?, task_names = ?, tenants = ? WHERE instance_id = ? AND cancel_seq = ?",
	InsertInstance: "INSERT INTO argo_instance (instance_id, heartbeat_at, started_at, task_names, tenants) VALUES (?, ?, ?, ?, ?)",
	LiveInstances:  "SELECT instance_id, task_names, tenants FROM argo_instance WHERE heartbeat_at >= ? ORDER BY instance_id",
	DeleteInstance: "DELETE FROM argo_instance WHERE instance_id = ?",

	TakeLeader:   "UPDATE argo_leader SET holder = ?, expires_at = ? WHERE name = ? AND (holder = ? OR expires_at < ?)",
	InsertLeader: "INSERT INTO argo_leader (name, holder, expires_at) VALUES (?, ?, ?)",
	DeleteLeader: "DELETE FROM argo_leader WHERE name = ? AND holder = ?",

	// The operating system's clock, which SQLite reads to the millisecond.
	DatabaseTime: "SELECT CAST(ROUND((julianday('now') - 2440587.5) * 86400000000.0) AS INTEGER)",

	CountByState: "SELECT task_status, COUNT(*) AS n FROM argo_task GROUP BY task_status",
	ListTasks: func(where, page string) string {
		return "SELECT " + taskColumns + " FROM argo_task WHERE " + where + page
	},
	CountTasks:          func(where string) string { return "SELECT COUNT(*) FROM argo_task WHERE " + where },
	TaskIDs:             func(where, page string) string { return "SELECT id FROM argo_task WHERE " + where + page },
	TaskNames:           "SELECT DISTINCT task_id FROM argo_task ORDER BY task_id",
	CountByNameAndState: "SELECT task_id, task_status, COUNT(*) AS n FROM argo_task GROUP BY task_id, task_status ORDER BY task_id, task_status",
	OldestDue:           "SELECT id, task_id, task_status, execute_time FROM argo_task WHERE task_status IN " + waiting + " AND execute_time <= ? ORDER BY execute_time, id LIMIT 1",
	AttemptsSince:       "SELECT COUNT(*) AS n, SUM(CASE WHEN outcome = ? THEN 0 ELSE 1 END) AS failed FROM argo_task_attempt WHERE kind = 'attempt' AND finished_at >= ?",
	SucceededOnRowSince: "SELECT COUNT(*) FROM argo_task WHERE task_status = " + succeeded + " AND gmt_modified >= ? AND attempt_started_at > 0",
	FinishedSince:       "SELECT COUNT(*) AS n, SUM(CASE WHEN task_status = " + dead + " THEN 1 ELSE 0 END) AS dead FROM argo_task WHERE task_status IN " + finished + " AND requeued_to IS NULL AND gmt_modified >= ?",

	SchemaProbes: []storage.SchemaProbe{
		{Migration: "000001_argo_task.up.sql", Query: "SELECT id, task_status, execute_time, task_parameter, lease_owner, gmt_modified FROM argo_task WHERE 1=0"},
		{Migration: "000001_argo_task.up.sql", Query: "SELECT id, " + attemptColumns + " FROM argo_task_attempt WHERE 1=0"},
		{Migration: "000001_argo_task.up.sql", Query: "SELECT instance_id, heartbeat_at, started_at, task_names FROM argo_instance WHERE 1=0"},
		{Migration: "000001_argo_task.up.sql", Query: "SELECT name, holder, expires_at FROM argo_leader WHERE 1=0"},
		{Migration: "000002_attempt_on_task.up.sql", Query: "SELECT attempt_started_at, attempt_worker FROM argo_task WHERE 1=0"},
		{Migration: "000003_submit_token.up.sql", Query: "SELECT submit_token FROM argo_task WHERE 1=0"},
		// binary is SQLite's own default collation: 000004 changes nothing
		// here, and the probe passes once the table exists.
		{Migration: "000004_unique_key_bytes.up.sql", Query: "SELECT unique_key COLLATE `binary` FROM argo_task WHERE 1=0"},
		{Migration: "000005_operator_trail.up.sql", Query: "SELECT requeued_from, requeued_to FROM argo_task WHERE 1=0"},
		{Migration: "000009_tenant_trace.up.sql", Query: "SELECT tenant, trace_parent FROM argo_task WHERE 1=0"},
		{Migration: "000012_instance_tenants.up.sql", Query: "SELECT tenants FROM argo_instance WHERE 1=0"},
		{Migration: "000016_deferred_attempts.up.sql", Query: "SELECT deferred_times FROM argo_task WHERE 1=0"},
		{Migration: "000017_has_downstream.up.sql", Query: "SELECT has_downstream FROM argo_task WHERE 1=0"},
		{Migration: "000018_instance_cancel_seq.up.sql", Query: "SELECT cancel_seq FROM argo_instance WHERE 1=0"},
		{Migration: "000019_progress.up.sql", Query: "SELECT progress, progress_note, progress_attempt, progress_at FROM argo_task WHERE 1=0"},
		{Migration: "000019_progress.up.sql", Query: "SELECT progress, progress_note, progress_at FROM argo_task_attempt WHERE 1=0"},
		{Migration: "000021_error_code.up.sql", Query: "SELECT error_code FROM argo_task WHERE 1=0"},
		{Migration: "000021_error_code.up.sql", Query: "SELECT error_code FROM argo_task_attempt WHERE 1=0"},
		{Migration: "000021_error_code.up.sql", Query: "SELECT source, from_state, to_state, refused FROM argo_refused_transition WHERE 1=0"},
		{Migration: "000022_operator_accounts.up.sql", Query: "SELECT db_account FROM argo_operator_action WHERE 1=0"},
		{Migration: "000022_operator_accounts.up.sql", Query: "SELECT requested_account FROM argo_discard_request WHERE 1=0"},
		{Migration: "000024_attempt_transitions.up.sql", Query: "SELECT from_state, to_state, trace_id FROM argo_task_attempt WHERE 1=0"},
		{Migration: "000005_operator_trail.up.sql", Query: "SELECT " + operatorActionColumns + " FROM argo_operator_action WHERE 1=0"},
		{Migration: "000005_operator_trail.up.sql", Query: "SELECT pending_task, " + discardRequestColumns + " FROM argo_discard_request WHERE 1=0"},
		{Migration: "000008_order_key.up.sql", Query: "SELECT order_key FROM argo_task INDEXED BY idx_order_open WHERE order_key IS NOT NULL AND task_status IN " + storage.StateSet(storage.OrderHoldingStates...) + " AND 1=0"},
	},
	CreateMigrationsTable: "CREATE TABLE IF NOT EXISTS argo_schema_migrations (version BIGINT NOT NULL PRIMARY KEY, applied_at BIGINT NOT NULL)",
	MigrationRecorded:     "SELECT COUNT(*) FROM argo_schema_migrations WHERE version = ?",
	RecordMigration:       "INSERT INTO argo_schema_migrations (version, applied_at) VALUES (?, ?)",

	RequeueSource: "SELECT " + taskColumns + " FROM argo_task WHERE id = ?",
	MarkRequeued:  "UPDATE " + byID + " SET requeued_to = ?, unique_key = NULL WHERE id = ? AND shard_key = ? AND task_status IN " + requeueable + " AND requeued_to IS NULL",
	LinkRequeued:  "UPDATE " + byID + " SET requeued_from = ?, unique_key = ? WHERE id = ? AND shard_key = ?",
	RequeueLinks:  "SELECT requeued_from, requeued_to FROM argo_task WHERE id = ?",

	InsertOperatorAction: "INSERT INTO argo_operator_action (task_pk, action, operator, reason, at, other_task, db_account) VALUES (?, ?, ?, ?, ?, ?, '')",
	OperatorActions:      "SELECT " + operatorActionColumns + ", db_account FROM argo_operator_action WHERE task_pk = ? ORDER BY id",
	InsertGroupAction:    "INSERT INTO argo_operator_action (task_pk, action, operator, reason, at, flow_group, db_account) VALUES (0, ?, ?, ?, ?, ?, '')",
	GroupActions:         "SELECT " + operatorActionColumns + ", db_account, flow_group FROM argo_operator_action WHERE flow_group = ? ORDER BY id",
	InsertDiscardRequest: "INSERT INTO argo_discard_request (task_pk, pending_task, requested_by, reason, requested_at, decision_reason, requested_account)" +
		" SELECT id, id, ?, ?, ?, '', '' FROM argo_task WHERE id = ? AND task_status IN " + discardable + " AND requeued_to IS NULL",
	OpenDiscardRequest:   "SELECT id, task_pk, requested_by, reason, requested_at, requested_account, '' AS current_account FROM argo_discard_request WHERE pending_task = ?",
	DecideDiscardRequest: "UPDATE argo_discard_request SET decision = ?, decided_by = ?, decided_at = ?, decision_reason = ?, pending_task = NULL WHERE id = ? AND pending_task IS NOT NULL AND requested_by <> ?",
	DiscardRequests:      "SELECT " + discardRequestColumns + ", requested_account FROM argo_discard_request WHERE task_pk = ? ORDER BY id",
	ForceFail:            "UPDATE " + byID + " SET task_status = " + dead + ", lease_owner = '', lease_until = 0, gmt_modified = ? WHERE id = ? AND task_status IN " + storage.StateSet(storage.ForceFailableStates...),
	RunNow:               "UPDATE " + byID + " SET execute_time = ?, lease_owner = '', lease_until = 0 WHERE id = ? AND task_status IN " + runnable,
	DeleteOperatorActions: func(n int) string {
		return "DELETE FROM argo_operator_action WHERE task_pk IN " + inIDs(n)
	},
	DeleteDiscardRequests: func(n int) string {
		return "DELETE FROM argo_discard_request WHERE task_pk IN " + inIDs(n)
	},
	CountDeadLetters: "SELECT COUNT(*) FROM argo_task WHERE task_status = " + dead + " AND requeued_to IS NULL",

	ScheduledHoldCandidates: ScheduledHoldCandidates,
	HoldScheduled:           "UPDATE " + byID + " SET lease_owner = ?, lease_until = ? WHERE id = ? AND shard_key = ? AND task_status = " + pending + " AND execute_times = ? AND execute_time = ? AND lease_until <= ?",
}

// ScheduledHoldCandidates reads the scheduled calls about to fall due
// (Statements.ScheduledHoldCandidates) through idx_claim_due, whose
// partial-index condition the WHERE repeats so that SQLite may use it.
func ScheduledHoldCandidates(scope string) string {
	return "SELECT " + taskColumns + " FROM argo_task INDEXED BY idx_claim_due WHERE task_status IN " + claimable + " AND task_status = " + pending +
		" AND execute_time > ? AND execute_time <= ? AND lease_until <= ? AND order_key IS NULL AND " + scope + " ORDER BY execute_time" + limitArg
}

// purgeableRow selects the rows the retention purge may delete: finished
// rows (succeeded, recovered, discarded) not requeued, and requeued rows
// (dead or discarded) whose new task is gone or purgeable itself, so that a
// chain of requeues is deleted from its newest end back.
var purgeableRow = "((task_status IN " + purgeable + " AND requeued_to IS NULL) OR (task_status IN " + requeueable + " AND requeued_to IS NOT NULL" +
	" AND NOT EXISTS (SELECT 1 FROM argo_task successor WHERE successor.id = argo_task.requeued_to AND NOT (successor.task_status IN " + purgeable + " AND successor.requeued_to IS NULL))))"

// runnable are the states RunNow moves forward: pending, retrying.
var runnable = storage.StateSet(storage.StatePending, storage.StateRetrying)

// operatorActionColumns and discardRequestColumns are the columns of
// storage.OperatorAction and storage.DiscardRequest.
const (
	operatorActionColumns = "id, task_pk, action, operator, reason, at, other_task"
	discardRequestColumns = "id, task_pk, requested_by, reason, requested_at, decision, decided_by, decided_at, decision_reason"
)
