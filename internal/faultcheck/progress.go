package faultcheck

import (
	"fmt"

	"github.com/argo-retry/argo/runtime"
)

// InvProgress: the progress stored of a task belongs to an attempt that ran
// it and made that report, never to an attempt later than the row's (a
// report fenced on its lease cannot land on the next attempt's row); the
// progress an attempt's history row keeps is a report the function made
// before the attempt's recorded end (its last, or an earlier one), and an
// attempt whose outcome its own instance recorded after reports keeps one
// (docs/progress.md).
const InvProgress = "progress"

// KindProgress is a progress report (runtime.ReportProgress) of execution
// (Task, Attempt), written before the report is made: Note and Frac.
const KindProgress = "progress"

// ProgressNote is the note of report step of an attempt: it names the
// attempt, so that a note stored for another attempt is seen.
func ProgressNote(attempt, step, steps int) string {
	return fmt.Sprintf("attempt %d: %d/%d", attempt, step, steps)
}

// ProgressSteps is how many reports a call working ms makes: none for a
// short one, 5 for a medium one, 10 for one longer than a second.
func ProgressSteps(ms int) int {
	switch {
	case ms >= 1000:
		return 10
	case ms >= 60:
		return 5
	}
	return 0
}

// checkProgress is InvProgress over in.
func checkProgress(in Input, bad func(inv, format string, args ...any)) {
	type ta struct {
		task    int64
		attempt int
	}
	reports := map[ta][]Record{} // each execution's reports, in history order
	ended := map[ta]int64{}      // the latest end of the attempt's executions (µs)
	started := map[ta]bool{}
	for _, r := range in.Records {
		k := ta{r.Task, r.Attempt}
		switch {
		case r.Kind == KindProgress:
			reports[k] = append(reports[k], r)
		case r.Kind == KindExec && !r.Fallback && r.Ev == "start":
			started[k] = true
		case r.Kind == KindExec && !r.Fallback && r.Ev != "start":
			ended[k] = max(ended[k], r.At)
		}
	}
	made := func(k ta, note string, before int64) bool {
		for _, r := range reports[k] {
			if r.Note == note && (before == 0 || r.At <= before) {
				return true
			}
		}
		return false
	}
	for _, row := range in.Rows {
		if row.ProgressAttempt == 0 {
			continue
		}
		k := ta{row.ID, row.ProgressAttempt}
		switch {
		case row.ProgressAttempt > row.ExecuteTimes:
			bad(InvProgress, "task %d holds progress %q of attempt %d, later than its attempt %d", row.ID, row.ProgressNote, row.ProgressAttempt, row.ExecuteTimes)
		case !started[k]:
			bad(InvProgress, "task %d holds progress %q of attempt %d, which never started", row.ID, row.ProgressNote, row.ProgressAttempt)
		case !made(k, row.ProgressNote, 0):
			bad(InvProgress, "task %d holds progress %q for attempt %d, which never reported it", row.ID, row.ProgressNote, row.ProgressAttempt)
		}
	}
	for _, a := range in.Attempts {
		k := ta{a.Task, a.Attempt}
		if a.ProgressNote != "" {
			if !made(k, a.ProgressNote, ended[k]) {
				bad(InvProgress, "attempt %d of task %d keeps progress %q in its history, which it did not report before it ended", a.Attempt, a.Task, a.ProgressNote)
			}
			continue
		}
		if unrun, _ := a.unrun(); unrun || a.Outcome == runtime.OutcomeLeaseExpired || a.Outcome == runtime.OutcomeCancelled || ended[k] == 0 {
			// No run of its own recorded it (the rescuer, an injected
			// failure; an operator's cancel, which keeps only the progress
			// a renewal stored before it: a report not carried yet is not
			// kept), or it never ended here.
			continue
		}
		if len(reports[k]) > 0 && reports[k][0].At <= ended[k] && a.Worker == reports[k][0].Inst && len(in.execInsts(a.Task, a.Attempt)) == 1 {
			bad(InvProgress, "attempt %d of task %d reported progress (%q first) before it ended %s, but its history row keeps none", a.Attempt, a.Task, reports[k][0].Note, a.Outcome)
		}
	}
}

// execInsts returns the instances that started attempt (task, attempt).
func (in Input) execInsts(task int64, attempt int) map[string]bool {
	out := map[string]bool{}
	for _, r := range in.Records {
		if r.Kind == KindExec && r.Ev == "start" && !r.Fallback && r.Task == task && r.Attempt == attempt {
			out[r.Inst] = true
		}
	}
	return out
}
