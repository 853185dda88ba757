package argotype

// MaxErrorTextBytes is the most bytes argo stores of one error text
// (argo_task.error_msg and fallback_error_msg, argo_task_attempt.error_msg):
// 16 KiB. A MySQL TEXT column holds 65,535 bytes; 16 KiB leaves room on
// every supported database and keeps a task row small, while holding an
// error message and a Go panic stack of ordinary depth. Longer texts are cut
// with a marker.
const MaxErrorTextBytes = 16 << 10

// MaxOrderKeyBytes is the longest order key (the width of
// argo_task.order_key): 255.
const MaxOrderKeyBytes = 255

// DefaultCountBound is the bound a console count stops at when the caller
// gives none (the Inspector's CountUpTo with max <= 0): 10,000; the list
// page then shows "10000+".
const DefaultCountBound = 10000

// A requeue was recorded, before migration 000005, in argo_task_attempt as
// a row of this kind and outcome (the task row itself went back to
// pending). Such rows stay in the histories they are in; a requeue now
// writes a new task and a record of the operator trail (ActionRequeue).
const (
	AttemptKindRequeue = "requeue"
	OutcomeRequeued    = "requeued"
)
