package runtime

// TransitionRefusedObserver is an Observer that also counts refused state
// transitions (code CodeTransitionInvalid, WF_STATE_TRANSITION_INVALID):
// an outcome this instance could not record because the task was no longer
// as its lease said (rescued, requeued, force-failed or discarded
// meanwhile: a stale worker's write), or a move the state machine forbids.
// The runtime calls it when Config.Observer implements it (metrics.Collector
// does); Observer itself is unchanged, so existing observers keep working.
type TransitionRefusedObserver interface {
	Observer
	// TransitionRefused: the write of a task moving from → to was refused.
	TransitionRefused(from, to State)
}

// refusedTransition logs a finish the database refused (the lease was
// lost or the move is not allowed) with the code CodeTransitionInvalid, and
// counts it into the observer if it counts them.
func (rt *Runtime) refusedTransition(f finishing, msg string) {
	rt.log.Warn(msg, "code", CodeTransitionInvalid, "task_id", f.ID, "attempt", f.Attempt, "from", f.From, "to", f.To)
	if o, ok := rt.cfg.Observer.(TransitionRefusedObserver); ok {
		o.TransitionRefused(f.From, f.To)
	}
}
