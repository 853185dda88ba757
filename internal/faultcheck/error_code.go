package faultcheck

import (
	"fmt"

	"github.com/argo-retry/argo/runtime"
)

// InvErrorCode: the error code on each attempt's history row is the code
// that attempt's function returned (runtime.Coded): none on a row no run
// of the attempt made it from (the rescuer's, a cancel's, an injected
// failure's), and never a code the attempt did not return; an attempt
// whose every run returned a coded error and whose outcome was recorded
// failed, permanent or deferred keeps the code; the task row's code is the
// one its last failed attempt's history row holds (docs/errors.md).
const InvErrorCode = "error-code"

// FailCode is the code the workload's function returns with an execution
// outcome (OutFail, OutPermanent, OutRetryAfter) of an attempt, and "" for
// other outcomes: it names the attempt, so that a code stored on another
// attempt's row is seen.
func FailCode(out string, attempt int) string {
	switch out {
	case OutFail:
		return fmt.Sprintf("FC_FAIL.%d", attempt)
	case OutPermanent:
		return fmt.Sprintf("FC_PERM.%d", attempt)
	case OutRetryAfter:
		return fmt.Sprintf("FC_BUSY.%d", attempt)
	}
	return ""
}

// codeOutcomes are the history outcomes a finish of a run that returned
// an error writes (its code with it).
var codeOutcomes = map[string]bool{runtime.OutcomeFailed: true, runtime.OutcomePermanent: true, runtime.OutcomeDeferred: true}

// checkErrorCode is InvErrorCode over in.
func checkErrorCode(in Input, bad func(inv, format string, args ...any)) {
	type ta struct {
		task    int64
		attempt int
	}
	returned := map[ta]map[string]bool{} // the codes the attempt's runs returned
	uncoded := map[ta]bool{}             // some run of the attempt ended without a code
	for _, r := range in.Records {
		if r.Kind != KindExec || r.Fallback || r.Ev != "end" {
			continue
		}
		k := ta{r.Task, r.Attempt}
		code := FailCode(r.Out, r.Attempt)
		if code == "" {
			uncoded[k] = true
			continue
		}
		if returned[k] == nil {
			returned[k] = map[string]bool{}
		}
		returned[k][code] = true
	}
	last := map[int64]AttemptRow{} // each task's last attempt recorded by its own finish
	for _, a := range in.Attempts {
		k := ta{a.Task, a.Attempt}
		unrun, _ := a.unrun()
		switch {
		case a.ErrorCode != "" && !returned[k][a.ErrorCode]:
			bad(InvErrorCode, "attempt %d of task %d keeps error code %q, which it did not return (it returned %v)", a.Attempt, a.Task, a.ErrorCode, keys(returned[k]))
		case a.ErrorCode == "" && codeOutcomes[a.Outcome] && !unrun && len(returned[k]) > 0 && !uncoded[k]:
			bad(InvErrorCode, "attempt %d of task %d ended %s returning %v, but its history row keeps no code", a.Attempt, a.Task, a.Outcome, keys(returned[k]))
		}
		if codeOutcomes[a.Outcome] || a.Outcome == runtime.OutcomePanicked || a.Outcome == runtime.OutcomeTimeout {
			if l, ok := last[a.Task]; !ok || a.Attempt > l.Attempt {
				last[a.Task] = a
			}
		}
	}
	for _, row := range in.Rows {
		want := last[row.ID].ErrorCode
		if row.ErrorCode != want {
			bad(InvErrorCode, "task %d holds error code %q, but its last failed attempt (%d) keeps %q", row.ID, row.ErrorCode, last[row.ID].Attempt, want)
		}
	}
}

// keys lists m's keys (for messages).
func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
