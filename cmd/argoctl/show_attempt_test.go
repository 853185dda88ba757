package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
)

// TestShowAttempt (seed 000's findByWorkflowIdAndAttempt(id, 2)): show ID
// -attempt N prints that one attempt (outcome, times, backoff, worker, the
// whole error), as text and as JSON; a number the task has not reached and
// a bad number are clear errors.
func TestShowAttempt(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			out := mustCtl(t, b.DSN, "show", "3", "-attempt", "2")
			for _, want := range []string{"task:", "3 (warehouse.LightOn)", "attempt:", "2 of 5", "outcome:", "failed", "backoff:", "2s", "error:", "HTTP 503 from peripheral"} {
				if !strings.Contains(out, want) {
					t.Errorf("show 3 -attempt 2 lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "history:") || strings.Contains(out, "arguments:") {
				t.Errorf("show -attempt prints the whole task:\n%s", out)
			}
			var j struct {
				TaskID  int64  `json:"task_id"`
				Attempt int    `json:"attempt"`
				Outcome string `json:"outcome"`
				Backoff int64  `json:"backoff_ms"`
				Error   string `json:"error"`
			}
			if err := json.Unmarshal([]byte(mustCtl(t, b.DSN, "show", "3", "-attempt", "5", "-o", "json")), &j); err != nil {
				t.Fatal(err)
			}
			if j.TaskID != 3 || j.Attempt != 5 || j.Outcome != "failed" || j.Error != "HTTP 503 from peripheral\n(retry later)" {
				t.Fatalf("show 3 -attempt 5 -o json: %+v", j)
			}
			failCtl(t, b.DSN, 1, "task 3 has no attempt 6", "show", "3", "-attempt", "6")
			failCtl(t, b.DSN, 1, "task 99 not found", "show", "99", "-attempt", "1")
			failCtl(t, b.DSN, 2, "-attempt", "show", "3", "-attempt", "-1")
		})
	}
}
