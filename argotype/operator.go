package argotype

import "database/sql"

// The actions of the operator trail (OperatorAction.Action,
// argo_operator_action.action).
const (
	ActionRequeue        = "requeue"         // a task requeued into a new task (OtherTask: the new task)
	ActionDiscard        = "discard"         // a discard without review
	ActionDiscardRequest = "discard_request" // a discard awaiting a second operator
	ActionDiscardApprove = "discard_approve" // the second operator approved: the task was discarded
	ActionDiscardReject  = "discard_reject"  // the second operator rejected: the task is untouched
	ActionForceFail      = "force_fail"      // a task no worker holds sent to the dead letter
	ActionRunNow         = "run_now"         // a waiting task made due now
	ActionCancel         = "cancel"          // a task ended discarded by a cancel, its running attempt (if any) stopped (docs/cancel.md)
	ActionBreakerOpen    = "breaker_open"    // a flow group's breaker opened by hand (TaskPK 0, Group)
	ActionBreakerClose   = "breaker_close"   // a flow group's breaker closed by hand (TaskPK 0, Group)
	// ActionTransientFail is a transient-fail request: the task's next
	// attempt fails as transient without calling its function, on an
	// instance started with fault injection enabled (Config.FaultInjection).
	ActionTransientFail = "transient_fail"
)

// OperatorAction is one record of the operator trail
// (argo_operator_action): who did what to a task, when and why.
type OperatorAction struct {
	ID       int64  `db:"id" json:"id"`             // the record's id
	TaskPK   int64  `db:"task_pk" json:"task_pk"`   // the task's row (argo_task.id); 0 for a breaker action
	Action   string `db:"action" json:"action"`     // what was done: one of the Action constants
	Operator string `db:"operator" json:"operator"` // who did it (the Inspector's Operator)
	Reason   string `db:"reason" json:"reason"`     // why, as the operator gave it ("" for none)
	At       Millis `db:"at" json:"at"`             // when
	// OtherTask is the task a requeue created (ActionRequeue); not Valid
	// for the other actions.
	OtherTask sql.NullInt64 `db:"other_task" json:"-"`
	// Group is the flow group of a breaker action (task_pk 0); "" for a
	// task's action.
	Group string `db:"flow_group" json:"flow_group,omitempty"`
	// DBAccount is the database account that made the change, as the
	// server authenticated it (MySQL's CURRENT_USER(), e.g.
	// "ops_alice@%"); "" on SQLite, which has no accounts, and for records
	// written before migration 000022.
	DBAccount string `db:"db_account" json:"db_account,omitempty"`
}

// DiscardRequest is a discard asked for by one operator, open until a
// different operator approves or rejects it (argo_discard_request).
type DiscardRequest struct {
	ID          int64  `db:"id" json:"id"`                     // the request's id
	TaskPK      int64  `db:"task_pk" json:"task_pk"`           // the task's row (argo_task.id)
	RequestedBy string `db:"requested_by" json:"requested_by"` // the operator who asked
	Reason      string `db:"reason" json:"reason"`             // the discard's reason
	RequestedAt Millis `db:"requested_at" json:"requested_at"` // when it was asked for
	// Decision is "approved" or "rejected" once decided; "" while open.
	Decision       string `db:"decision" json:"decision"`
	DecidedBy      string `db:"decided_by" json:"decided_by"`           // the second operator ("" while open)
	DecidedAt      Millis `db:"decided_at" json:"decided_at"`           // when it was decided (0 while open)
	DecisionReason string `db:"decision_reason" json:"decision_reason"` // the second operator's reason
	// RequestedAccount is the database account that asked (CURRENT_USER()
	// on MySQL; "" on SQLite and before migration 000022). An approval
	// from the same account is refused unless the Inspector allows it
	// (the console does: it authenticates its operators itself).
	RequestedAccount string `db:"requested_account" json:"requested_account,omitempty"`
}

// RequeueLinks are the links of a task row to the tasks it was requeued
// from and into.
type RequeueLinks struct {
	From int64 // the task this one is the requeue of (0: none)
	To   int64 // the task this one was requeued into (0: none)
}
