package storage

import (
	"strings"
	"unicode/utf8"

	"github.com/argo-retry/argo/argotype"
)

// MaxProgressNote is the most characters of a progress note stored
// (argo_task.progress_note, argo_task_attempt.progress_note: VARCHAR(200)).
const MaxProgressNote = argotype.MaxProgressNote

// LeaseProgress is the latest progress an attempt running under Key
// reported (runtime.ReportProgress), carried by a lease renewal
// (RenewLeases) to the task row.
type LeaseProgress struct {
	Key      LeaseKey
	Fraction float64
	Note     string
	At       Millis // when the attempt made the report
}

// SanitizeProgressNote makes s storable in a progress_note column on every
// database: its bytes that are not valid UTF-8, and NUL, are escaped as
// SanitizeErrorText does (\xNN), and a note longer than MaxProgressNote
// characters is cut to MaxProgressNote - 1 and ends with "…". The runtime
// refuses such notes before they get here (ReportProgress); this keeps a
// renewal, which carries them, from being refused by a strict-mode server,
// which would cost the leases it renews.
func SanitizeProgressNote(s string) string {
	if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		s, _ = escapeText(s, escapedLen(s))
	}
	if utf8.RuneCountInString(s) <= MaxProgressNote {
		return s
	}
	n := 0
	for i := range s {
		if n == MaxProgressNote-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// ExtendLeasesProgress turns an ExtendLeases statement into one that also
// writes the progress of p of its leases: after the statement's first SET
// assignment (lease_until, argument until) come progress, progress_note,
// progress_at and progress_attempt (the row's execute_times, which the
// statement's fence equals to the lease's attempt), each a CASE on id. The
// statement's WHERE, the renewal's fence (owner, leased state, attempt),
// is kept: a report of a lease that is gone writes nothing. Arguments:
// until; p × (id, fraction); p × (id, note); p × (id, at); the p ids;
// then those of the ExtendLeases statement after until.
func ExtendLeasesProgress(extend string, p int) string {
	i := strings.Index(extend, " WHERE ")
	when := strings.Repeat(" WHEN ? THEN ?", p)
	ids := Placeholders(p)
	set := ", progress = CASE id" + when + " ELSE progress END" +
		", progress_note = CASE id" + when + " ELSE progress_note END" +
		", progress_at = CASE id" + when + " ELSE progress_at END" +
		", progress_attempt = CASE WHEN id IN " + ids + " THEN execute_times ELSE progress_attempt END"
	return extend[:i] + set + extend[i:]
}

// progressArgs are the arguments ExtendLeasesProgress adds after until.
func progressArgs(prog []LeaseProgress) []any {
	args := make([]any, 0, 7*len(prog))
	for _, p := range prog {
		args = append(args, p.Key.ID, p.Fraction)
	}
	for _, p := range prog {
		args = append(args, p.Key.ID, SanitizeProgressNote(p.Note))
	}
	for _, p := range prog {
		args = append(args, p.Key.ID, p.At)
	}
	for _, p := range prog {
		args = append(args, p.Key.ID)
	}
	return args
}

// progressOf returns the entries of prog whose key is among keys.
func progressOf(prog []LeaseProgress, keys []LeaseKey) []LeaseProgress {
	if len(prog) == 0 {
		return nil
	}
	in := make(map[LeaseKey]bool, len(keys))
	for _, k := range keys {
		in[k] = true
	}
	var out []LeaseProgress
	for _, p := range prog {
		if in[p.Key] {
			out = append(out, p)
		}
	}
	return out
}

// finishProgress is the SET of a finish whose attempt reported progress
// (Finishing.History.ProgressAt > 0): the task row keeps the attempt's
// last report, as the attempt's history row does. None for a finish
// without, whose statement is then unchanged.
func finishProgress(f Finishing) (string, []any) {
	a := f.History
	if a == nil || a.Kind != "attempt" || a.ProgressAt == 0 || f.UndoAttempt {
		return "", nil
	}
	return ", progress = ?, progress_note = ?, progress_at = ?, progress_attempt = ?", []any{a.Progress, SanitizeProgressNote(a.ProgressNote), a.ProgressAt, f.Attempt}
}
