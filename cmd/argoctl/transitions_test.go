package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
)

// TestShowTransitions: show prints one ordered list of the task's recorded
// changes — its attempts' moves from the history (with the trace id of the
// span each ran in) and its operator actions from the trail, from → to —
// and -o json carries it as "transitions". Task 2 failed twice (running →
// retrying, the first attempt traced); an operator force-fails it: retrying
// → dead, by that operator.
func TestShowTransitions(t *testing.T) {
	const trace = "0af7651916cd43dd8448eb211c80319c"
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			db, _ := openDB(t, b.DSN)
			defer db.Close()
			if _, err := db.Exec("UPDATE argo_task_attempt SET trace_id = ? WHERE task_pk = 2 AND attempt = 1", trace); err != nil {
				t.Fatal(err)
			}
			mustCtl(t, b.DSN, "force-fail", "2", "-reason", "scheduler retired", "-operator", "alice")
			out := mustCtl(t, b.DSN, "show", "2")
			i := strings.Index(out, "\ntransitions:\n")
			if i < 0 {
				t.Fatalf("show 2 has no transitions section:\n%s", out)
			}
			section := out[i:]
			if j := strings.Index(section[1:], "\n\n"); j >= 0 {
				section = section[:j+1]
			}
			lines := strings.Split(strings.TrimSpace(section), "\n")[2:] // past the title and the header
			want := [][]string{
				{"1", "attempt", "failed", "running → retrying", "host-a-1234", trace},
				{"2", "attempt", "failed", "running → retrying", "host-a-1234", "-"},
				{"2", "operator", "force_fail", "retrying → dead", "alice", "-"},
			}
			if len(lines) != len(want) {
				t.Fatalf("transitions section has %d rows, want %d:\n%s", len(lines), len(want), section)
			}
			for k, w := range want {
				for _, cell := range w {
					if !strings.Contains(lines[k], cell) {
						t.Fatalf("transition %d %q lacks %q:\n%s", k+1, lines[k], cell, section)
					}
				}
			}
			var j struct {
				Transitions []struct {
					Attempt int    `json:"attempt"`
					From    string `json:"from"`
					To      string `json:"to"`
					Kind    string `json:"kind"`
					What    string `json:"what"`
					By      string `json:"by"`
					TraceID string `json:"trace_id"`
				} `json:"transitions"`
			}
			if err := json.Unmarshal([]byte(mustCtl(t, b.DSN, "show", "2", "-o", "json")), &j); err != nil {
				t.Fatal(err)
			}
			if len(j.Transitions) != 3 || j.Transitions[0].TraceID != trace || j.Transitions[0].From != "running" || j.Transitions[0].To != "retrying" ||
				j.Transitions[2].Kind != "operator" || j.Transitions[2].What != "force_fail" || j.Transitions[2].From != "retrying" || j.Transitions[2].To != "dead" || j.Transitions[2].By != "alice" {
				t.Fatalf("show 2 -o json transitions: %+v", j.Transitions)
			}
		})
	}
}
