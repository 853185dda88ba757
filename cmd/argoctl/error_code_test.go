package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
)

// TestShowAndListErrorCode: show prints the task's error code (its last
// failed attempt's) and, when some attempt returned one, a CODE column in
// the history; show -attempt N prints the attempt's; -o json carries both;
// list -code selects by it exactly (case matters) and a code runtime.Coded
// would refuse is a usage error saying what a code is. A task without a
// code prints none of it (the goldens).
func TestShowAndListErrorCode(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			db, _ := openDB(t, b.DSN)
			defer db.Close()
			for _, q := range []string{
				"UPDATE argo_task SET error_code = 'PAY_TIMEOUT' WHERE id = 3",
				"UPDATE argo_task SET error_code = 'pay_timeout' WHERE id = 5",
				"UPDATE argo_task_attempt SET error_code = 'PAY_TIMEOUT' WHERE task_pk = 3 AND attempt = 4",
			} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			out := mustCtl(t, b.DSN, "show", "3")
			if !strings.Contains(out, "error code:") || !strings.Contains(out, "PAY_TIMEOUT") || !strings.Contains(out, "CODE") {
				t.Errorf("show 3 lacks its code or the CODE column:\n%s", out)
			}
			if out := mustCtl(t, b.DSN, "show", "3", "-attempt", "4"); !strings.Contains(out, "error code:") || !strings.Contains(out, "PAY_TIMEOUT") {
				t.Errorf("show 3 -attempt 4 lacks its code:\n%s", out)
			}
			if out := mustCtl(t, b.DSN, "show", "3", "-attempt", "5"); strings.Contains(out, "error code:") {
				t.Errorf("show 3 -attempt 5 (no code) shows one:\n%s", out)
			}
			var j struct {
				ErrorCode string `json:"error_code"`
				Attempts  []struct {
					Attempt   int    `json:"attempt"`
					ErrorCode string `json:"error_code"`
				} `json:"attempts"`
			}
			if err := json.Unmarshal([]byte(mustCtl(t, b.DSN, "show", "3", "-o", "json")), &j); err != nil {
				t.Fatal(err)
			}
			if j.ErrorCode != "PAY_TIMEOUT" {
				t.Fatalf("show 3 -o json: error_code %q", j.ErrorCode)
			}
			for _, a := range j.Attempts {
				if (a.Attempt == 4) != (a.ErrorCode == "PAY_TIMEOUT") {
					t.Fatalf("show 3 -o json: attempt %d code %q; want PAY_TIMEOUT on attempt 4 only", a.Attempt, a.ErrorCode)
				}
			}
			var listed struct {
				Tasks []struct {
					ID int64 `json:"id"`
				} `json:"tasks"`
			}
			if err := json.Unmarshal([]byte(mustCtl(t, b.DSN, "list", "-code", "PAY_TIMEOUT", "-o", "json")), &listed); err != nil {
				t.Fatal(err)
			}
			if len(listed.Tasks) != 1 || listed.Tasks[0].ID != 3 {
				t.Fatalf("list -code PAY_TIMEOUT: %+v, want task 3 alone", listed)
			}
			failCtl(t, b.DSN, 2, "-code: error code \"PAY TIMEOUT\" (11 bytes) refused: a code is 1 to 64 characters", "list", "-code", "PAY TIMEOUT")
		})
	}
}

// TestRefusedChangesCounted: a change argoctl asks for that the state
// machine refuses (force-fail of the running task 8 and of the recovered
// task 6, run-now of task 8) is counted in the database as argoctl's
// (argo_refused_transition), where the metrics of any instance read it;
// an accepted change and a usage error are not counted.
func TestRefusedChangesCounted(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			failCtl(t, b.DSN, 1, "WF_STATE_TRANSITION_INVALID", "force-fail", "8", "-reason", "x")
			failCtl(t, b.DSN, 1, "WF_STATE_TRANSITION_INVALID", "force-fail", "8", "-reason", "x")
			failCtl(t, b.DSN, 1, "WF_STATE_TRANSITION_INVALID", "force-fail", "6", "-reason", "x")
			failCtl(t, b.DSN, 1, "WF_STATE_TRANSITION_INVALID", "run", "8")
			failCtl(t, b.DSN, 2, "force-fail needs -reason", "force-fail", "2")
			mustCtl(t, b.DSN, "force-fail", "2", "-reason", "endpoint retired")
			db, _ := openDB(t, b.DSN)
			defer db.Close()
			rows, err := db.Query("SELECT source, from_state, to_state, refused FROM argo_refused_transition ORDER BY source, from_state, to_state")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var got []string
			for rows.Next() {
				var src, from, to string
				var n int
				if err := rows.Scan(&src, &from, &to, &n); err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprintf("%s %s->%s %d", src, from, to, n))
			}
			want := []string{"argoctl recovered->dead 1", "argoctl running->dead 2", "argoctl running->running 1"}
			if strings.Join(got, "; ") != strings.Join(want, "; ") {
				t.Fatalf("counts %q, want %q", got, want)
			}
		})
	}
}
