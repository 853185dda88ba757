package storage

import "github.com/argo-retry/argo/argotype"

// Ordered keys (docs/semantics.md, "Ordered keys").
//
// A task written with an order key (argo_task.order_key) is a claim
// candidate only while no task of the same key with a smaller id is
// unfinished: the claim's candidate read carries the engine's order gate
// (each driver's OrderGate). Only the head of each key is ever claimable,
// so a key's tasks start one at a time, in id order, on any instance.
//
// The gate needs no lock and no write: it is monotonic. Once every earlier
// task of a key has finished, none of them becomes unfinished again (a
// requeue writes a new task, with a new and larger id, at the end of the
// key's order), so a gate read true before the fenced take stays true
// when the take runs. The take's own fence (state and attempt as read)
// keeps two claimers from both taking the head.
//
// Rows without a key never reach the gate's subquery (order_key IS NULL
// short-circuits it), and their index entry never changes.
//
// Paths that start a row outside the claim are closed to keyed tasks: a
// keyed Immediate call is never written leased by Submit, a transactional
// submit's watcher does not start it, and a keyed scheduled call is never
// held for a local timer (Statements.ScheduledHoldCandidates). A held retry
// is the key's head already (it was claimed through the gate), and keeps
// the key while it waits.

// OrderHoldingStates are the states in which a task holds its order key:
// every state that is not terminal (pending, running, retrying, exhausted,
// falling_back, blocked — a task waiting for its upstream tasks keeps its
// place). The key passes on when the task ends succeeded, recovered, dead,
// discarded or skipped. Migration 000008's index condition lists the same
// states.
var OrderHoldingStates = orderHoldingStates()

func orderHoldingStates() []State {
	var out []State
	for _, s := range argotype.AllStates {
		if !s.Terminal() {
			out = append(out, s)
		}
	}
	return out
}

// MaxOrderKeyBytes is the longest order key (the width of
// argo_task.order_key).
const MaxOrderKeyBytes = 255
