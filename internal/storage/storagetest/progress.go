package storagetest

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/argo-retry/argo/internal/storage"
)

// progressCases: the progress of a long attempt (runtime.ReportProgress,
// docs/progress.md), carried by lease renewals and finishes (migration
// 000019).
func progressCases() []testCase {
	return []testCase{
		{"RenewalCarriesProgress", progressRenewalCarries},
		{"RenewalFence", progressRenewalFence},
		{"FinishKeepsProgress", progressFinishKeeps},
		{"NoteData", progressNoteData},
	}
}

// A renewal carrying the progress of some of its leases renews them all
// and writes each report to its own row (fraction, note, when it was made,
// the attempt: the row's execute_times), leaving the rows without a report
// as they were but for the lease.
func progressRenewalCarries(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	a := leasedTask("p", running, 1, 0, "me", 2, 100)
	b := leasedTask("p", running, 1, 0, "me", 1, 100)
	insert(t, s, a, b)
	keys := []storage.LeaseKey{{ID: a.ID, Attempt: 2}, {ID: b.ID, Attempt: 1}}
	lost, _, err := s.RenewLeases(ctx, "me", keys, []storage.LeaseProgress{{Key: keys[0], Fraction: 0.25, Note: "page 1 of 4", At: 140}}, 300, 150)
	if err != nil || len(lost) != 0 {
		t.Fatalf("renewal with progress: lost %v, %v; want both held", lost, err)
	}
	ra, rb := get(t, s, a.ID), get(t, s, b.ID)
	if ra.LeaseUntil != 300 || rb.LeaseUntil != 300 {
		t.Fatalf("lease_until %d and %d, want 300 for both", ra.LeaseUntil, rb.LeaseUntil)
	}
	if ra.Progress != 0.25 || ra.ProgressNote != "page 1 of 4" || ra.ProgressAt != 140 || ra.ProgressAttempt != 2 {
		t.Fatalf("reported row: progress %v %q at %d attempt %d; want 0.25 \"page 1 of 4\" at 140 attempt 2", ra.Progress, ra.ProgressNote, ra.ProgressAt, ra.ProgressAttempt)
	}
	if rb.Progress != 0 || rb.ProgressNote != "" || rb.ProgressAt != 0 || rb.ProgressAttempt != 0 {
		t.Fatalf("a row without a report got progress %v %q at %d attempt %d", rb.Progress, rb.ProgressNote, rb.ProgressAt, rb.ProgressAttempt)
	}
	// A later report replaces it; one with the same values keeps the lease held.
	for range 2 {
		lost, _, err = s.RenewLeases(ctx, "me", keys[:1], []storage.LeaseProgress{{Key: keys[0], Fraction: 1, Note: "", At: 160}}, 400, 160)
		if err != nil || len(lost) != 0 {
			t.Fatalf("second renewal: lost %v, %v", lost, err)
		}
	}
	if ra = get(t, s, a.ID); ra.Progress != 1 || ra.ProgressNote != "" || ra.ProgressAt != 160 || ra.LeaseUntil != 400 {
		t.Fatalf("after the second report: %+v", ra)
	}
}

// A report carried for a lease that is gone writes nothing: the rows of
// another owner's lease, of a later attempt, of a rescued, finished or
// held task are left exactly as they were (fenced like the renewal); the
// leases still held get theirs.
func progressRenewalFence(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	mine := leasedTask("r", running, 1, 0, "me", 1, 100)
	theirs := leasedTask("r", running, 1, 0, "other", 1, 100)
	nextAttempt := leasedTask("r", running, 1, 0, "me", 2, 100) // reported as attempt 1 below
	rescued := leasedTask("r", retrying, 1, 0, "", 1, 0)
	finished := newTask("r", succeeded, 1, 0)
	finished.ExecuteTimes = 1
	held := leasedTask("r", retrying, 1, 0, "me", 1, 100)
	insert(t, s, mine, theirs, nextAttempt, rescued, finished, held)
	var keys []storage.LeaseKey
	var prog []storage.LeaseProgress
	before := map[int64]storage.Task{}
	for _, task := range []*storage.Task{mine, theirs, nextAttempt, rescued, finished, held} {
		k := storage.LeaseKey{ID: task.ID, Attempt: 1}
		keys = append(keys, k)
		prog = append(prog, storage.LeaseProgress{Key: k, Fraction: 0.5, Note: "stale?", At: 120})
		before[task.ID] = *get(t, s, task.ID)
	}
	lost, _, err := s.RenewLeases(ctx, "me", keys, prog, 300, 150)
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) != len(keys)-1 {
		t.Fatalf("lost %v, want every lease but %d's", lost, mine.ID)
	}
	if row := get(t, s, mine.ID); row.Progress != 0.5 || row.ProgressAttempt != 1 || row.LeaseUntil != 300 {
		t.Fatalf("the held lease's row: %+v", row)
	}
	for _, k := range lost {
		if row := get(t, s, k.ID); *row != before[k.ID] {
			t.Fatalf("a report of a lost lease changed its row:\n got %+v\nwant %+v", row, before[k.ID])
		}
	}
}

// The finish of an attempt that reported progress writes its last report
// on the task row and, for an attempt that did not succeed, on its
// history row; a finish of one that reported none leaves the task row's
// earlier progress (another attempt's) alone.
func progressFinishKeeps(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	task := newTask("f", pending, 1, 0)
	insert(t, s, task)
	c := claimByID(t, s, task.ID, "w", 10, 100)
	f := failure(c, retrying, 20, "boom")
	f.History.Progress, f.History.ProgressNote, f.History.ProgressAt = 0.75, "3 of 4", 15
	if err := s.Finish(ctx, f, 20); err != nil {
		t.Fatal(err)
	}
	atts := attempts(t, s, task.ID)
	if len(atts) != 1 || atts[0].Progress != 0.75 || atts[0].ProgressNote != "3 of 4" || atts[0].ProgressAt != 15 {
		t.Fatalf("history %+v, want one attempt with progress 0.75 \"3 of 4\" at 15", atts)
	}
	if row := get(t, s, task.ID); row.Progress != 0.75 || row.ProgressAttempt != 1 || row.ProgressAt != 15 {
		t.Fatalf("task row after the failed attempt: progress %v attempt %d at %d", row.Progress, row.ProgressAttempt, row.ProgressAt)
	}
	// Attempt 2 reports nothing and fails: the row keeps attempt 1's report.
	c, err := s.ClaimByID(ctx, task.ID, task.ShardKey, retrying, "w", 30, 200)
	if err != nil || c == nil {
		t.Fatalf("claim again: %v, %v", c, err)
	}
	if err := s.Finish(ctx, failure(c, retrying, 40, "boom"), 40); err != nil {
		t.Fatal(err)
	}
	if atts = attempts(t, s, task.ID); len(atts) != 2 || atts[1].ProgressAt != 0 || atts[1].Progress != 0 {
		t.Fatalf("history %+v, want attempt 2 without progress", atts)
	}
	if row := get(t, s, task.ID); row.Progress != 0.75 || row.ProgressAttempt != 1 {
		t.Fatalf("attempt 2's finish changed attempt 1's progress on the row: %v attempt %d", row.Progress, row.ProgressAttempt)
	}
	// Attempt 3 reports and succeeds: the task row, its record, has it.
	c, err = s.ClaimByID(ctx, task.ID, task.ShardKey, retrying, "w", 50, 300)
	if err != nil || c == nil {
		t.Fatalf("claim again: %v, %v", c, err)
	}
	ok := success(c)
	ok.History.Progress, ok.History.ProgressNote, ok.History.ProgressAt = 1, "done", 55
	if err := s.Finish(ctx, ok, 60); err != nil {
		t.Fatal(err)
	}
	if row := get(t, s, task.ID); row.State != succeeded || row.Progress != 1 || row.ProgressNote != "done" || row.ProgressAttempt != 3 || row.ProgressAt != 55 {
		t.Fatalf("succeeded row: %s progress %v %q attempt %d at %d", row.State, row.Progress, row.ProgressNote, row.ProgressAttempt, row.ProgressAt)
	}
}

// A note the runtime would refuse (too long, not UTF-8, with NUL) that
// reaches the store anyway is stored storable, never refused: a renewal
// refused for its data would cost every lease it renews. It is cut to
// MaxProgressNote characters, its bad bytes escaped (\xNN), on MySQL in
// strict mode with utf8mb4 too (4-byte characters fit).
func progressNoteData(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	long := strings.Repeat("😀", storage.MaxProgressNote+50)
	exact := strings.Repeat("é", storage.MaxProgressNote)
	cases := []struct{ name, note, want string }{
		{"long", long, strings.Repeat("😀", storage.MaxProgressNote-1) + "…"},
		{"exact", exact, exact},
		{"not UTF-8", "half \xff\xfe done", `half \xff\xfe done`},
		{"NUL", "a\x00b", `a\x00b`},
	}
	for _, c := range cases {
		task := leasedTask("n", running, 1, 0, "me", 1, 100)
		insert(t, s, task)
		k := storage.LeaseKey{ID: task.ID, Attempt: 1}
		lost, _, err := s.RenewLeases(ctx, "me", []storage.LeaseKey{k}, []storage.LeaseProgress{{Key: k, Fraction: 0.5, Note: c.note, At: 120}}, 300, 150)
		if err != nil || len(lost) != 0 {
			t.Fatalf("%s note: renewal lost %v, %v; want the lease renewed", c.name, lost, err)
		}
		row := get(t, s, task.ID)
		if row.ProgressNote != c.want || !utf8.ValidString(row.ProgressNote) || utf8.RuneCountInString(row.ProgressNote) > storage.MaxProgressNote {
			t.Fatalf("%s note stored as %s (%d characters), want %s", c.name, short(row.ProgressNote), utf8.RuneCountInString(row.ProgressNote), short(c.want))
		}
		// The finish's history row takes the same note.
		f := failure(row, retrying, 200, "boom")
		f.History.Progress, f.History.ProgressNote, f.History.ProgressAt = 0.5, c.note, 190
		if err := s.Finish(ctx, f, 200); err != nil {
			t.Fatalf("%s note: finish: %v", c.name, err)
		}
		if atts := attempts(t, s, task.ID); len(atts) != 1 || atts[0].ProgressNote != c.want {
			t.Fatalf("%s note: history %+v, want the note %s", c.name, atts, short(c.want))
		}
	}
}
