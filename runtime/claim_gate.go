package runtime

// startsOutsideClaim reports whether call c, written as row t, may start on
// this instance without a claim: an Immediate call without RunAt, whose
// task has a handler here and no flow control (a flow group's calls start
// only through its gated claim), without an order key (the claim's order
// gate), without dependencies (a dependent waits, blocked, for its
// upstream), of a name and tenant this instance works. It is the one rule
// for every start that skips the claim: Submit's first attempt written
// leased, and SubmitTx's commit watcher (which also claims only the row its
// own call wrote, by the submit token: ClaimSubmitted). Held retries and
// held scheduled calls keep their own fences (a held retry's task already
// holds its key; a scheduled call is held only without an order key or
// flow control).
func (rt *Runtime) startsOutsideClaim(c Call, t *Task, h *TaskDef) bool {
	return t.PerformanceWay == Immediate && c.RunAt.IsZero() && h != nil && h.Flow == nil &&
		c.OrderKey == "" && len(c.After) == 0 && rt.works(t.Name, t.Tenant)
}
