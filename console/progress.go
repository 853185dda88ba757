package console

import (
	"fmt"
	"math"

	"github.com/argo-retry/argo/runtime"
)

// percent prints a progress fraction as a whole percentage, rounded down
// (99.9% done is not 100%).
func percent(fraction float64) string {
	return fmt.Sprintf("%d%%", int(math.Floor(fraction*100)))
}

// progressText is an attempt's or a task's reported progress as the
// console prints it: "42% page 42 of 100" ("" when none was reported).
func progressText(fraction float64, note string, reported bool) string {
	if !reported {
		return ""
	}
	if note == "" {
		return percent(fraction)
	}
	return percent(fraction) + " " + note
}

// taskProgress describes t's latest progress written, with the attempt
// that reported it and when ("" if no attempt reported any;
// docs/progress.md).
func taskProgress(t *runtime.Task) string {
	if t.ProgressAttempt == 0 {
		return ""
	}
	return progressText(t.Progress, t.ProgressNote, true) + fmt.Sprintf(" (attempt %d, reported %s)", t.ProgressAttempt, fmtMillis(t.ProgressAt))
}

// taskFraction is t's latest progress fraction for the page's bar (nil:
// none reported).
func taskFraction(t *runtime.Task) *float64 {
	if t.ProgressAttempt == 0 {
		return nil
	}
	f := t.Progress
	return &f
}
