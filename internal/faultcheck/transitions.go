package faultcheck

import (
	"cmp"
	"slices"

	"github.com/argo-retry/argo/runtime"
)

// InvTransitions: each task's recorded transitions (the from → to of its
// attempt and fallback history rows, migration 000024; docs/semantics.md
// "The transitions of a task") are moves of the state machine, each the
// move its outcome makes (a deferred attempt retries, a permanent one
// exhausts, a cancelled one ends discarded, a fallback that succeeded
// recovers, one that failed ends dead, a rescued one is exhausted again);
// in the order written they chain (each from is where the move before left
// the task, or one claim away from it: retrying → running, exhausted →
// falling_back), nothing follows a move into a final state, the task's
// state at the end is the last move's or reachable from it (a success, an
// operator's discard or force-fail write no history row); and a move
// agrees with what the worker's run of that attempt returned (only
// permanent errors: exhausted; only RetryAfter: retrying).
const InvTransitions = "transitions"

// moveTargets are the states an attempt's (kind attempt) history row may
// move to, by outcome, from running.
var moveTargets = map[string][]runtime.State{
	runtime.OutcomeFailed:       {runtime.StateRetrying, runtime.StateExhausted},
	runtime.OutcomePanicked:     {runtime.StateRetrying, runtime.StateExhausted},
	runtime.OutcomeTimeout:      {runtime.StateRetrying, runtime.StateExhausted},
	runtime.OutcomeLeaseExpired: {runtime.StateRetrying, runtime.StateExhausted},
	runtime.OutcomePermanent:    {runtime.StateExhausted},
	runtime.OutcomeDeferred:     {runtime.StateRetrying},
	runtime.OutcomeCancelled:    {runtime.StateDiscarded},
	runtime.OutcomeSucceeded:    {runtime.StateSucceeded},
}

// fallbackTargets: the same for a fallback's row, from falling_back.
var fallbackTargets = map[string][]runtime.State{
	runtime.OutcomeSucceeded:    {runtime.StateRecovered},
	runtime.OutcomeFailed:       {runtime.StateDead},
	runtime.OutcomePanicked:     {runtime.StateDead},
	"no_fallback":               {runtime.StateDead},
	runtime.OutcomeLeaseExpired: {runtime.StateExhausted},
}

// claimOf is the state a claim moves a task in state s to (s itself when
// no claim starts from s).
func claimOf(s runtime.State) runtime.State {
	switch s {
	case runtime.StatePending, runtime.StateRetrying:
		return runtime.StateRunning
	case runtime.StateExhausted:
		return runtime.StateFallingBack
	}
	return s
}

// reachable reports whether the state machine leads from from to to (in
// any number of moves, none included).
func reachable(from, to runtime.State) bool {
	seen := map[runtime.State]bool{from: true}
	queue := []runtime.State{from}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s == to {
			return true
		}
		for _, n := range runtime.Transitions(s) {
			if !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	return false
}

// moveRead reports whether a's move was read: a row the check is given
// without one (the zero pair, pending → pending, no move of the state
// machine, as storage never writes it) is not checked here.
func (a AttemptRow) moveRead() bool {
	return a.From != runtime.StatePending || a.To != runtime.StatePending
}

// checkTransitions is InvTransitions over in.
func checkTransitions(in Input, bad func(inv, format string, args ...any)) {
	type ta struct {
		task    int64
		attempt int
	}
	outs := map[ta]map[string]bool{} // what each attempt's runs returned, by instance and outcome
	for _, r := range in.Records {
		if r.Kind != KindExec || r.Fallback || r.Ev != "end" {
			continue
		}
		k := ta{r.Task, r.Attempt}
		if outs[k] == nil {
			outs[k] = map[string]bool{}
		}
		outs[k][r.Inst+"/"+r.Out] = true
	}
	byTask := map[int64][]AttemptRow{}
	for _, a := range in.Attempts {
		a.Kind = "attempt"
		byTask[a.Task] = append(byTask[a.Task], a)
	}
	for _, a := range in.Fallbacks {
		a.Kind = "fallback"
		byTask[a.Task] = append(byTask[a.Task], a)
	}
	final := map[int64]runtime.State{}
	for _, r := range in.Rows {
		final[r.ID] = r.State
	}
	for task, rows := range byTask {
		slices.SortStableFunc(rows, func(a, b AttemptRow) int { return cmp.Compare(a.ID, b.ID) })
		var prev *AttemptRow
		for i := range rows {
			a := &rows[i]
			if !a.moveRead() {
				continue
			}
			from, targets := runtime.StateRunning, moveTargets
			if a.Kind == "fallback" {
				from, targets = runtime.StateFallingBack, fallbackTargets
			}
			switch {
			case a.From == runtime.StateUnrecorded || a.To == runtime.StateUnrecorded:
				bad(InvTransitions, "%s %d of task %d (%s) was written without its move (%s -> %s)", a.Kind, a.Attempt, task, a.Outcome, a.From, a.To)
			case a.From != from || !runtime.CanTransition(a.From, a.To):
				bad(InvTransitions, "%s %d of task %d (%s) records the move %s -> %s; a %s's finish moves from %s, by the state machine", a.Kind, a.Attempt, task, a.Outcome, a.From, a.To, a.Kind, from)
			case !slices.Contains(targets[a.Outcome], a.To):
				bad(InvTransitions, "%s %d of task %d ended %s but records the move %s -> %s (that outcome moves to %v)", a.Kind, a.Attempt, task, a.Outcome, a.From, a.To, targets[a.Outcome])
			}
			if prev != nil {
				switch {
				case prev.To.Terminal():
					bad(InvTransitions, "task %d: %s %d records %s -> %s after %s %d ended it %s", task, a.Kind, a.Attempt, a.From, a.To, prev.Kind, prev.Attempt, prev.To)
				case a.From != prev.To && a.From != claimOf(prev.To):
					bad(InvTransitions, "task %d: %s %d moves from %s, but %s %d left it %s (a claim leads to %s)", task, a.Kind, a.Attempt, a.From, prev.Kind, prev.Attempt, prev.To, claimOf(prev.To))
				}
			}
			if a.Kind == "attempt" {
				// What the run that recorded it returned (its own worker's).
				o := outs[ta{task, a.Attempt}]
				perm, busy, fail := o[a.Worker+"/"+OutPermanent], o[a.Worker+"/"+OutRetryAfter], o[a.Worker+"/"+OutFail]
				switch {
				case a.Outcome == runtime.OutcomePermanent && perm && !busy && !fail && a.To != runtime.StateExhausted:
					bad(InvTransitions, "attempt %d of task %d returned a permanent error on %s, but its row moves it to %s", a.Attempt, task, a.Worker, a.To)
				case a.Outcome == runtime.OutcomeDeferred && busy && !perm && !fail && a.To != runtime.StateRetrying:
					bad(InvTransitions, "attempt %d of task %d returned RetryAfter on %s, but its row moves it to %s", a.Attempt, task, a.Worker, a.To)
				}
			}
			prev = a
		}
		if prev == nil {
			continue
		}
		end, ok := final[task]
		switch {
		case !ok:
		case prev.To.Terminal() && end != prev.To:
			bad(InvTransitions, "task %d ends %s, but its last recorded move (%s %d) ended it %s", task, end, prev.Kind, prev.Attempt, prev.To)
		case !reachable(prev.To, end):
			bad(InvTransitions, "task %d ends %s, which the state machine does not reach from %s, where its last recorded move (%s %d) left it", task, end, prev.To, prev.Kind, prev.Attempt)
		}
	}
}
