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
// The gate alone is not enough where ids do not follow commit order. MySQL
// hands out an id at the INSERT: a keyed call written in a transaction left
// open (the outbox) holds id N while a later call of its key gets N+k,
// commits and is taken; when the transaction commits, N sees no earlier
// unfinished call and would start beside N+k. So on MySQL every take of a
// keyed call runs under its key's row of argo_order_lock (migration
// 000015; mysqldriver/order_take.go): it locks the row, re-checks the gate
// and that the key's holder (the call the key's last take started) is not
// in OrderStartedStates, takes the call and makes it the holder, in one
// transaction. Two takes of one key are serialised, and a call never
// starts while another of its key runs, whatever the ids. On SQLite one
// transaction writes at a time: a transaction that inserted a keyed row
// holds the write lock until it ends, ids follow commit order, and the
// claim's gate, one statement under that lock, is exact. Once every earlier
// task of a key has finished none of them becomes unfinished again (a
// requeue writes a new task at the end of the key's order; a keyed task
// skipped by a failed upstream task is requeued as a new call, not brought
// back: order_requeue.go).
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

// OrderStartedStates are the states of a call that has started and holds
// its key until it ends: running, retrying, exhausted, falling_back. A
// keyed take refuses a call while its key's holder is in one of them
// (argo_order_lock, migration 000015; each driver's keyed take).
var OrderStartedStates = []State{StateRunning, StateRetrying, StateExhausted, StateFallingBack}

// MaxOrderKeyBytes is the longest order key (the width of
// argo_task.order_key).
const MaxOrderKeyBytes = argotype.MaxOrderKeyBytes
