package main

import (
	"fmt"
	"math"

	"github.com/argo-retry/argo/runtime"
)

// progressCell is a reported progress as argoctl prints it: "42%", and
// ": note" when there is one (docs/progress.md).
func progressCell(fraction float64, note string, width int) string {
	s := fmt.Sprintf("%d%%", int(math.Floor(fraction*100)))
	if note != "" {
		s += " " + cell(note, width)
	}
	return s
}

// taskProgress describes the task's latest progress written ("" if no
// attempt reported any): "42% page 42 of 100 (attempt 2, reported …)".
func taskProgress(t *runtime.Task) string {
	if t.ProgressAttempt == 0 {
		return ""
	}
	return progressCell(t.Progress, t.ProgressNote, 200) + fmt.Sprintf(" (attempt %d, reported %s)", t.ProgressAttempt, fmtMillis(t.ProgressAt))
}

// attemptProgress is an attempt's last report for the history table ("-"
// if it made none).
func attemptProgress(a runtime.Attempt) string {
	if a.ProgressAt == 0 {
		return "-"
	}
	return progressCell(a.Progress, a.ProgressNote, 40)
}

// anyProgress reports whether some attempt of atts reported progress: the
// history table then has a PROGRESS column.
func anyProgress(atts []runtime.Attempt) bool {
	for _, a := range atts {
		if a.ProgressAt != 0 {
			return true
		}
	}
	return false
}

// progressJSON is a reported progress in argoctl's JSON.
type progressJSON struct {
	Fraction float64 `json:"fraction"`
	Note     string  `json:"note"`
	Attempt  int     `json:"attempt,omitempty"`
	Reported *string `json:"reported"`
}

func taskProgressJSON(t *runtime.Task) *progressJSON {
	if t.ProgressAttempt == 0 {
		return nil
	}
	return &progressJSON{Fraction: t.Progress, Note: t.ProgressNote, Attempt: t.ProgressAttempt, Reported: jsonTime(t.ProgressAt)}
}

func attemptProgressJSON(a runtime.Attempt) *progressJSON {
	if a.ProgressAt == 0 {
		return nil
	}
	return &progressJSON{Fraction: a.Progress, Note: a.ProgressNote, Reported: jsonTime(a.ProgressAt)}
}
