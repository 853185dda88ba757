package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// TestShowProgress: show prints the task's latest progress (fraction, note,
// the attempt that reported it, when) and, when some attempt reported
// progress, a PROGRESS column in the history; show -attempt N prints the
// attempt's last report; -o json carries both. A task without progress
// prints neither (show_dead.golden).
func TestShowProgress(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			db, _ := openDB(t, b.DSN)
			defer db.Close()
			// Task 8 runs: its attempt 1's renewal wrote 42%. Task 3's
			// attempt 4 ended at 60%.
			if _, err := db.Exec("UPDATE argo_task SET progress = 0.42, progress_note = 'page 42 of 100', progress_attempt = 1, progress_at = ? WHERE id = 8", ms(-500*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec("UPDATE argo_task_attempt SET progress = 0.6, progress_note = 'rows 600 of 1000', progress_at = ? WHERE task_pk = 3 AND attempt = 4", ms(-20*time.Minute)); err != nil {
				t.Fatal(err)
			}
			out := mustCtl(t, b.DSN, "show", "8")
			if !strings.Contains(out, "progress:") || !strings.Contains(out, "42% page 42 of 100 (attempt 1, reported 2025-") {
				t.Errorf("show 8 lacks its progress:\n%s", out)
			}
			out = mustCtl(t, b.DSN, "show", "3")
			if !strings.Contains(out, "PROGRESS") || !strings.Contains(out, "60% rows 600 of 1000") || strings.Contains(out, "progress:") {
				t.Errorf("show 3 lacks attempt 4's progress (or shows the task's, which it has not):\n%s", out)
			}
			lines := strings.Split(out, "\n")
			for _, l := range lines {
				if strings.HasPrefix(strings.TrimSpace(l), "5 ") && !strings.Contains(l, " - ") {
					t.Errorf("attempt 5, which reported nothing, shows progress: %q", l)
				}
			}
			out = mustCtl(t, b.DSN, "show", "3", "-attempt", "4")
			if !strings.Contains(out, "progress:") || !strings.Contains(out, "60% rows 600 of 1000 (reported ") {
				t.Errorf("show 3 -attempt 4 lacks its progress:\n%s", out)
			}
			var j struct {
				Progress *struct {
					Fraction float64 `json:"fraction"`
					Note     string  `json:"note"`
					Attempt  int     `json:"attempt"`
				} `json:"progress"`
			}
			if err := json.Unmarshal([]byte(mustCtl(t, b.DSN, "show", "8", "-o", "json")), &j); err != nil {
				t.Fatal(err)
			}
			if j.Progress == nil || j.Progress.Fraction != 0.42 || j.Progress.Note != "page 42 of 100" || j.Progress.Attempt != 1 {
				t.Fatalf("show 8 -o json: progress %+v", j.Progress)
			}
			var h struct {
				Attempts []struct {
					Attempt  int `json:"attempt"`
					Progress *struct {
						Fraction float64 `json:"fraction"`
					} `json:"progress"`
				} `json:"attempts"`
			}
			if err := json.Unmarshal([]byte(mustCtl(t, b.DSN, "show", "3", "-o", "json")), &h); err != nil {
				t.Fatal(err)
			}
			for _, a := range h.Attempts {
				if (a.Attempt == 4) != (a.Progress != nil) || (a.Progress != nil && a.Progress.Fraction != 0.6) {
					t.Fatalf("show 3 -o json: attempt %d progress %+v; want 0.6 on attempt 4 only", a.Attempt, a.Progress)
				}
			}
		})
	}
}
