package storage

// Statements is every statement the Store runs, in one engine's SQL. A
// driver fills in every field; the Store only passes arguments, in the
// order each field's comment gives. Fields that are functions build a
// statement for n rows or around a part the Store renders (a SET list, a
// Filter's condition). Placeholders are '?'. A statement on argo_task by id
// names the row's shard_key beside it, the argument after the id (n rows:
// the n ids, then the n shard keys), so that a sharding proxy routes it to
// one shard (docs/deployment.md); the few that cannot are listed, with the
// reason, in TestByIDStatementsNameShardKey's exceptions.
type Statements struct {
	// InsertTask writes a task row: arguments InsertArgs(t), then the
	// submit token (argo_task.submit_token).
	InsertTask string
	// TaskIDByUniqueKey reads the id of the row with a task name and unique
	// key: arguments name, unique key.
	TaskIDByUniqueKey string
	// TaskIDBySubmitToken reads the id of the row written with a submit
	// token: argument token.
	TaskIDBySubmitToken string
	// DeleteBySubmitToken deletes the row written with a submit token
	// (inside the caller's transaction): argument token.
	DeleteBySubmitToken string
	// GetTask reads TaskColumns of one row: argument id. It names no
	// shard_key: it serves the reads by an id alone (an operator's, which
	// a sharding proxy scatters; docs/deployment.md).
	GetTask string
	// GetTaskOnShard is GetTask for a caller that holds the row's shard
	// key: arguments id, shard_key.
	GetTaskOnShard string
	// TaskState reads task_status of one row: argument id.
	TaskState string
	// TaskAttempts reads the argo_task_attempt rows of a task, oldest
	// first (id, task_pk, attempt, kind, worker, started_at, finished_at,
	// outcome, error_msg, backoff_ms, progress, progress_note,
	// progress_at, error_code): argument id.
	TaskAttempts string
	// AttemptOnTaskRow reads the attempt a task row records (task_status,
	// execute_times, attempt_started_at, attempt_worker, gmt_modified,
	// and the progress columns): argument id.
	AttemptOnTaskRow string
	// InsertAttempts writes n attempt rows in one statement: per row
	// task_pk, attempt, kind, worker, started_at, finished_at, outcome,
	// error_msg, backoff_ms, progress, progress_note, progress_at,
	// error_code, from_state, to_state, trace_id.
	InsertAttempts func(n int) string
	// CountRefusedTransition adds one to a count of refused operator
	// changes, creating its row (argo_refused_transition, migration
	// 000021): arguments source, from_state, to_state.
	CountRefusedTransition string
	// RefusedTransitions reads source, from_state, to_state, refused of
	// every count, ordered by them.
	RefusedTransitions string

	// ClaimDueColumn names the column the claim's due index
	// (idx_claim_due) orders by, for a lower bound on it
	// (Store.ClaimTenant): MySQL's generated due_at, SQLite's execute_time
	// (its partial index); no arguments.
	ClaimDueColumn string
	// ClaimByID leases one claimable row still in a given state, due and
	// neither leased nor held: arguments owner, lease_until, now (the
	// claim's SET), then id, shard_key, state, now (due by), now (lease
	// ended by).
	ClaimByID string
	// ClaimSubmitted leases the due, pending, unleased row without an order
	// key that one submit wrote: arguments owner, lease_until, now (the
	// claim's SET), then id, shard_key, submit token, now (due by), now
	// (lease ended by).
	ClaimSubmitted string
	// ClaimTake leases one candidate still as read: arguments owner,
	// lease_until, now (the claim's SET), then id, shard_key, task_status,
	// execute_times (as read), due by, now (lease ended by).
	ClaimTake string

	// FinishUpdate is the fenced UPDATE of one finish around set (the
	// Store's SET list): arguments set's, then the fence: id, shard_key,
	// task_status, lease_owner, execute_times.
	FinishUpdate func(set string) string
	// Rescue ends an expired lease still exactly as read: arguments state,
	// execute_time, error_msg, now, then id, shard_key, task_status,
	// lease_owner, execute_times, lease_until.
	Rescue string
	// ExtendLeases renews n leases, never shortening one (a renewal landing
	// after a later one leaves the later end): arguments until, owner, the
	// n ids, the n shard keys, then n (id, execute_times) pairs.
	ExtendLeases func(n int) string
	// ExtendLeasesProgress(n, p) renews n leases as ExtendLeases(n) does
	// and writes the progress of p of them (storage.ExtendLeasesProgress;
	// below, the lists before owner are p long, and p is n): arguments
	// until, n (id, fraction) pairs, n (id, note) pairs, n (id, at) pairs,
	// the n ids, owner, the n ids, the n shard keys, then n (id,
	// execute_times) pairs.
	ExtendLeasesProgress func(n, p int) string
	// LeaseHolders reads id, shard_key, execute_times, lease_owner,
	// task_status of n rows: the n ids, then the n shard keys.
	LeaseHolders func(n int) string
	// ConfirmSubmitLease renews the lease of a row written leased for its
	// first attempt, still exactly that: arguments lease_until, id,
	// shard_key, owner.
	ConfirmSubmitLease string
	// SubmitLeaseHeld counts (0 or 1) that row leased until a given time:
	// arguments id, shard_key, owner, lease_until.
	SubmitLeaseHeld string
	// StartHeld starts one held retry or held scheduled call still held:
	// arguments lease_until, now, then id, shard_key, task_status (retrying
	// or pending), lease_owner, execute_times, lease_until (the hold).
	StartHeld string
	// HeldStartStates reads id, task_status, lease_owner, execute_times,
	// lease_until, gmt_modified of n rows: the n ids, then the n shard
	// keys.
	HeldStartStates func(n int) string
	// ReleaseHolds gives n held retries or scheduled calls (waiting rows)
	// of an owner back: arguments owner, the n ids, the n shard keys.
	ReleaseHolds func(n int) string
	// DeadHolds counts, per owner, the live holds of instances not
	// heartbeating: arguments now, cutoff, self; columns lease_owner,
	// tasks, until_ms.
	DeadHolds string
	// AttemptRecorded counts attempt rows equal to one: arguments task_pk,
	// attempt, kind, worker, started_at, finished_at, outcome.
	AttemptRecorded string

	// OrphanCandidates reads id, shard_key, task_id of overdue claimable
	// rows not yet flagged whose name is none of known names: arguments
	// cutoff, the flag's LIKE pattern, the known names, limit.
	OrphanCandidates func(known int) string
	// FlagOrphan sets the error_msg of one row still claimable: arguments
	// message, id, shard_key, name.
	FlagOrphan string
	// ExpiredLeases reads TaskColumns of leased rows whose lease ended
	// before now, oldest first: arguments now, limit.
	ExpiredLeases string

	// Discard ends a discardable row not requeued: arguments reason, now, id.
	Discard string
	// Cancel ends a row as read (cancel.go) as discarded, its lease
	// cleared: arguments reason, now, id, shard_key, state, lease owner,
	// attempt.
	Cancel string

	// PurgeCandidates reads id, shard_key of purgeable rows changed before
	// a cutoff: arguments cutoff, limit.
	PurgeCandidates string
	// PurgeLock reads again (id, shard_key), locked against writers until
	// the transaction ends, those of n rows still purgeable: arguments
	// cutoff, the n ids, the n shard keys.
	PurgeLock func(n int) string
	// DeleteTasks deletes n tasks: the n ids, then the n shard keys.
	DeleteTasks func(n int) string
	// DeleteAttempts deletes the attempt rows of n tasks: the n ids.
	DeleteAttempts func(n int) string

	// UpdateInstance records a heartbeat, fenced on the cancel_seq the
	// instance last saw (0 rows: the row is missing or a cancel moved it;
	// instance_cancel.go): arguments heartbeat_at, task_names, tenants,
	// instance_id, cancel_seq.
	UpdateInstance string
	// InsertInstance adds an instance: arguments instance_id,
	// heartbeat_at, started_at, task_names, tenants.
	InsertInstance string
	// LiveInstances reads instance_id, task_names, tenants of instances
	// heartbeating since a cutoff, by id: argument cutoff.
	LiveInstances string
	// DeleteInstance removes an instance: argument instance_id.
	DeleteInstance string

	// TakeLeader extends or takes a role: arguments holder, expires_at,
	// name, holder, now.
	TakeLeader string
	// InsertLeader creates a role's row: arguments name, holder, expires_at.
	InsertLeader string
	// DeleteLeader releases a role: arguments name, holder.
	DeleteLeader string

	// DatabaseTime reads the server's clock in Unix microseconds (UTC).
	DatabaseTime string

	// CountByState reads task_status, n over every task.
	CountByState string
	// ListTasks, CountTasks and TaskIDs read TaskColumns, COUNT(*) and ids
	// of the tasks where (a Filter's condition) selects, ordered and paged
	// by page (a Filter's ORDER BY and LIMIT).
	ListTasks  func(where, page string) string
	CountTasks func(where string) string
	TaskIDs    func(where, page string) string
	// TaskNames reads the distinct task names, sorted.
	TaskNames string
	// CountByNameAndState reads task_id, task_status, n, by name then state.
	CountByNameAndState string
	// OldestDue reads id, task_id, task_status, execute_time of the waiting
	// task due longest ago: argument now.
	OldestDue string
	// AttemptsSince reads n, failed (attempts other than the succeeded
	// outcome) of attempt rows finished since: arguments succeeded outcome,
	// since.
	AttemptsSince string
	// SucceededOnRowSince counts succeeded tasks recording their attempt,
	// changed since: argument since.
	SucceededOnRowSince string
	// FinishedSince reads n, dead of tasks finished since: argument since.
	FinishedSince string

	// FlowLockRead reads FlowColumns, FlowBudgetColumns and FlowGrantColumns of one group,
	// locking its row until the transaction ends (SQLite: the transaction
	// holds the file's write lock already): argument group_name. Every such
	// transaction that changes anything (a claim that took tasks) ends with
	// FlowWrite, which changes the row (lock_seq + 1): on Galera, two of them
	// on different nodes conflict at certification.
	FlowLockRead string
	// FlowInsert adds a flow group's row unless it exists: argument
	// group_name.
	FlowInsert string
	// FlowWrite writes a group's state: arguments members, tokens,
	// refilled_at, breaker_state, breaker_until, cooldown_ms, probe_task,
	// window_start, window_ok, window_failed, closed_at, opened_count,
	// updated_at, budget_start, budget_firsts, budget_retries, grants,
	// then group_name.
	FlowWrite string
	// FlowGroups reads FlowColumns, FlowBudgetColumns and FlowGrantColumns of every group, by
	// name.
	FlowGroups string
	// FlowRunning counts the running rows of n task names: the n names.
	FlowRunning func(n int) string
	// FlowCandidates reads TaskColumns of due rows in one of states (a
	// StateSet) that scope selects, oldest due first: arguments due by,
	// now, scope's, limit.
	FlowCandidates func(states, scope string) string
	// FlowDue is FlowCandidates reading only the ids.
	FlowDue func(states, scope string) string
	// FlowTakeAll takes n candidates at once, each still as read:
	// arguments owner, lease_until, now (the claim's SET), the n ids, the n
	// shard keys, n (id, task_status, execute_times) triples, due by, now.
	FlowTakeAll func(n int) string
	// FlowCandidatesCounted is FlowCandidates with one more column,
	// flow_running: FlowRunning of n member names, counted by the same
	// statement (one read fewer in the gated claim): arguments the n names,
	// then FlowCandidates's.
	FlowCandidatesCounted func(states, scope string, n int) string

	// SchemaProbes select every column argo uses, each under the migration
	// that creates it, in migration order.
	SchemaProbes []SchemaProbe
	// CreateMigrationsTable creates argo_schema_migrations if missing.
	CreateMigrationsTable string
	// MigrationRecorded counts the records of a version: argument version.
	MigrationRecorded string
	// RecordMigration records a version: arguments version, applied_at.
	RecordMigration string

	// The operators' statements (migration 000005; operator.go, requeue.go).

	// RequeueSource reads TaskColumns of the row to requeue, locked until
	// the transaction ends on an engine with row locks: argument id.
	// (MarkRequeued is the guard: it changes the row only if it may be
	// requeued.)
	RequeueSource string
	// MarkRequeued records on such a row the task it was requeued into and
	// frees its unique key: arguments requeued_to, id, shard_key.
	MarkRequeued string
	// LinkRequeued sets a new row's requeued_from and unique_key: arguments
	// requeued_from, unique_key, id, shard_key (of the new row).
	LinkRequeued string
	// RequeueLinks reads requeued_from, requeued_to of one row: argument id.
	RequeueLinks string
	// InsertOperatorAction writes one record of the operator trail, with
	// the database account that runs it (CURRENT_USER(); '' on SQLite):
	// arguments task_pk, action, operator, reason, at, other_task.
	InsertOperatorAction string
	// OperatorActions reads a task's trail (id, task_pk, action, operator,
	// reason, at, other_task, db_account), oldest first: argument task_pk.
	OperatorActions string
	// InsertGroupAction writes one record of a flow group's trail (task_pk
	// 0, the database account as InsertOperatorAction): arguments action,
	// operator, reason, at, flow_group.
	InsertGroupAction string
	// GroupActions reads a flow group's trail (the columns of
	// OperatorActions and flow_group), oldest first: argument flow_group.
	GroupActions string
	// InsertDiscardRequest opens a discard request for a discardable row
	// not requeued (its task_pk and pending_task: the row's id): arguments
	// requested_by, reason, requested_at, then id (the database account
	// as InsertOperatorAction).
	InsertDiscardRequest string
	// OpenDiscardRequest reads id, task_pk, requested_by, reason,
	// requested_at, requested_account of the open request of a task, and
	// current_account (the account the statement runs as; '' on SQLite),
	// locked on an engine with row locks: argument task id.
	OpenDiscardRequest string
	// DecideDiscardRequest closes an open request by an operator other
	// than the one who made it: arguments decision, decided_by, decided_at,
	// decision_reason, then request id, decided_by.
	DecideDiscardRequest string
	// DiscardRequests reads every request of a task (DiscardRequest's
	// columns, requested_account last), oldest first: argument task_pk.
	DiscardRequests string
	// ForceFail moves a row in ForceFailableStates to dead, unleased:
	// arguments now, id.
	ForceFail string
	// RunNow makes a pending or retrying row due now and drops a hold on
	// it: arguments execute_time, id.
	RunNow string
	// DeleteOperatorActions and DeleteDiscardRequests delete the trail and
	// the requests of n purged tasks: the n ids.
	DeleteOperatorActions, DeleteDiscardRequests func(n int) string
	// CountDeadLetters counts dead rows not requeued: the dead letters
	// awaiting an operator.
	CountDeadLetters string

	// ScheduledHoldCandidates reads TaskColumns of pending rows in scope
	// due after one time and by another, neither leased nor held, in due
	// order (scheduled calls about to fall due): arguments due after, due
	// by, now, scope's, limit.
	ScheduledHoldCandidates func(scope string) string
	// HoldScheduled holds one scheduled call still as read for its owner's
	// timer: arguments lease_owner, lease_until (the hold), then id,
	// shard_key, execute_times, execute_time (as read), now (lease ended
	// by).
	HoldScheduled string

	// DeadLettersByTenant counts CountDeadLetters' rows per tenant (column
	// tenant, n), tenants in order; no arguments.
	DeadLettersByTenant string
	// CountByStateOfTenant is CountByState for one tenant: argument tenant.
	CountByStateOfTenant string

	// The backlog statements (backlog.go), at most once per scrape.

	// BacklogDueByTask counts the claimable rows (pending, retrying,
	// exhausted) due by now per task name (columns name, n, oldest: the
	// earliest execute_time): argument now.
	BacklogDueByTask string
	// BacklogDueByTenant is BacklogDueByTask per tenant, the most due
	// first: arguments now, limit.
	BacklogDueByTenant string
	// BacklogHeld counts the retries held by an instance (retrying, lease
	// running) per task name and tenant (columns task_id, tenant, n):
	// argument now.
	BacklogHeld string
	// The dependency statements (migration 000007; dependencies.go).

	// DepUpstreamStates reads id, task_status of n rows, locked until the
	// transaction ends on an engine with row locks: the n ids.
	DepUpstreamStates func(n int) string
	// InsertDeps writes n edges: per edge task_pk, upstream_pk,
	// upstream_outcome, created_at.
	InsertDeps func(n int) string
	// DepRecordOutcome records an upstream task's outcome on its unsettled
	// edges if the task is in the given state: arguments outcome,
	// upstream_pk, id (the same), task_status.
	DepRecordOutcome string
	// DepRelease makes pending the blocked tasks after an upstream task
	// whose edges are all succeeded: arguments now, upstream_pk.
	DepRelease string
	// DepSkip skips the blocked tasks downstream, transitively, of an
	// upstream task whose edges record a failure: arguments upstream_pk,
	// error_msg, now.
	DepSkip string
	// DepUpstream and DepDownstream read other (the task at the other end),
	// task_status (-1 when purged), upstream_outcome of a task's edges, by
	// other: argument id.
	DepUpstream, DepDownstream string
	// DeleteDeps deletes the edges of n purged tasks, at either end: the n
	// ids, twice.
	DeleteDeps func(n int) string
	// DepDownstreamClosure reads id, task_status of every task downstream
	// of one, transitively: argument upstream_pk.
	DepDownstreamClosure string
	// DepEdgesOf reads task_pk, upstream_pk, upstream_outcome and the
	// upstream task's task_status (-1 when purged) of the edges of n
	// tasks: the n ids.
	DepEdgesOf func(n int) string
	// DepRepoint moves the edges from one upstream task to another, unsettled, for n
	// tasks: arguments new upstream_pk, old upstream_pk, the n ids.
	DepRepoint func(n int) string
	// DepUnskip makes n skipped tasks blocked again, their error cleared:
	// arguments now, the n ids.
	DepUnskip func(n int) string

	// The console's reads (console_reads.go, overview.go).
	//
	// CountTasksUpTo counts the tasks where (a Filter's condition) selects,
	// reading at most a bound of them: arguments where's, then the bound.
	CountTasksUpTo func(where string) string
	// TaskNamesContaining reads the distinct task names whose lower-cased
	// form is LIKE a pattern (escape '!'): argument the pattern.
	TaskNamesContaining string
	// OverviewCounts reads task_id, tenant, task_status, n of the tasks in
	// the states not in PurgeableStates.
	OverviewCounts string
	// OverviewRecentCounts reads task_id, tenant, task_status, n of the
	// tasks in PurgeableStates changed since: argument since.
	OverviewRecentCounts string
	// OverviewFinishedBuckets reads b (the bucket: (gmt_modified - since)
	// divided by the width, rounded down), task_status, n of the succeeded,
	// recovered and dead tasks changed since, from idx_retention alone:
	// arguments since, width, since.
	OverviewFinishedBuckets string
	// OverviewFailedAttemptBuckets reads b, n, retried (attempt > 1) of the
	// attempt rows (kind attempt) finished since without success:
	// arguments since, width, the succeeded outcome, since.
	OverviewFailedAttemptBuckets string
	// OverviewFailedRetryLateness reads started, late_ms (started_at minus
	// the previous attempt's finished_at + backoff_ms), ended of the retries
	// (attempt rows numbered 2 or more) finished since, latest first:
	// arguments since, limit.
	OverviewFailedRetryLateness string
	// OverviewSucceededRetryLateness reads the same of the succeeded tasks
	// changed since whose last attempt was a retry (attempt_started_at
	// against the attempt row before it; ended: gmt_modified), latest
	// first: arguments since, limit.
	OverviewSucceededRetryLateness string
	// OverviewDeadGrowth reads task_id, tenant, n of the dead tasks changed
	// since, by name then tenant: argument since.
	OverviewDeadGrowth string
	// OverviewInstances reads instance_id, heartbeat_at, started_at,
	// task_names of every instance, by id.
	OverviewInstances string
	// OverviewHolds reads lease_owner, n of the waiting tasks held past
	// now: argument now.
	OverviewHolds string
	// OverviewNameDue reads 1 if a claimable task of a name is due, else
	// 0: arguments name, now.
	OverviewNameDue string
}

// SchemaProbe is a statement that fails unless the tables and columns a
// migration creates are there.
type SchemaProbe struct {
	Migration string // the file under sql/<dialect>/, e.g. "000002_attempt_on_task.up.sql"
	Query     string
}
