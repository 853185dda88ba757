package runtime

import (
	"errors"

	"github.com/argo-retry/argo/argotype"
)

// Ordered keys (Call.OrderKey; docs/semantics.md, "Ordered keys").
//
// A keyed call starts only through the claim, whose order gate admits a
// keyed row only while no earlier row of its key is unfinished, and whose
// keyed take (internal/storage/order.go) re-checks the key under the key's
// lock on MySQL, so two calls of one key never run at once even when an
// outbox call commits after a later one started. Every other start path
// is closed to it: Submit
// does not write it leased for an immediate first attempt, SubmitTx's
// commit watcher does not claim it by id, and the scheduled-call holds
// never hold it. A held retry keeps the key (the task is unfinished).

// MaxOrderKeyBytes is the longest Call.OrderKey (the width of
// argo_task.order_key).
const MaxOrderKeyBytes = argotype.MaxOrderKeyBytes

// errOrderedFlow refuses a keyed call of a task under flow control: the
// flow group's gated claim does not apply the order gate.
var errOrderedFlow = errors.New("an order key cannot be used with a task under flow control (limit=, rate=, breaker=): its gated claim does not keep the key's order; drop the order key or the flow control")

// orderedCallAllowed refuses a keyed call the order gate cannot order.
// h is the task's handler on this instance (nil if it has none).
func orderedCallAllowed(c Call, h *TaskDef) error {
	if c.OrderKey != "" && (c.Task.Flow != nil || (h != nil && h.Flow != nil)) {
		return errOrderedFlow
	}
	return nil
}
