package storage

// Each transition recorded (issue #26, seed 001 §6; migration 000024): the
// attempt history row a finish writes in its own transaction carries the
// move that finish made (from_state → to_state) and the trace id of the
// attempt's span. A succeeded attempt still writes no row: the task row
// records it (running → succeeded), so a plain success costs nothing more.

// MaxTraceIDBytes is the width of argo_task_attempt.trace_id: a W3C trace
// id is 16 bytes, 32 lower-case hex digits.
const MaxTraceIDBytes = 32

// withMove is a copy of a with the move from → to (a itself is left alone:
// the caller may write it again with another move, as a rescue does).
func withMove(a *Attempt, from, to State) *Attempt {
	if a == nil {
		return nil
	}
	c := *a
	c.From, c.To = from, to
	return &c
}

// recordedMove is the from and to a's row stores: a's own, except the zero
// pair (pending → pending, which is no move of the state machine: a row
// written by a caller that named none), stored as StateUnrecorded, as rows
// written before migration 000024 read.
func recordedMove(a *Attempt) (from, to State) {
	if a.From == StatePending && a.To == StatePending {
		return StateUnrecorded, StateUnrecorded
	}
	return a.From, a.To
}

// StorableTraceID is id if it is a trace id argo can store unaltered (at
// most MaxTraceIDBytes of lower-case hex digits), else "": a trace id
// comes from the tracer (trace.TraceID.String), so anything else is a bug
// upstream, and the history row is written without it rather than refused.
func StorableTraceID(id string) string {
	if len(id) > MaxTraceIDBytes {
		return ""
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ""
		}
	}
	return id
}
