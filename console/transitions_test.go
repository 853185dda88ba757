package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/argo-retry/argo/console"
)

// TestTransitionsShown: the task page lists the task's recorded changes in
// one table, oldest first: its attempt's move from the history (with the
// trace id of the span it ran in) and an operator's force-fail, from the
// state the attempt left the task in to dead, by that operator; the live
// JSON the page refreshes it from carries them.
func TestTransitionsShown(t *testing.T) {
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	backends(t, func(t *testing.T, e *env) {
		if _, err := e.db.Exec("UPDATE argo_task_attempt SET from_state = 1, to_state = 2, trace_id = ? WHERE task_pk = ?", trace, idRetrying); err != nil {
			t.Fatal(err)
		}
		in := *e.in
		in.Operator = "alice"
		if err := in.ForceFail(context.Background(), idRetrying, "scheduler retired"); err != nil {
			t.Fatal(err)
		}
		h := e.handler(console.Options{})
		if j := get(t, h, "/api/tasks/2.json"); !strings.Contains(j, `"transitions":[{`) || !strings.Contains(j, `"from":"retrying","to":"dead","by":"alice"`) || !strings.Contains(j, `"trace_id":"`+trace+`"`) {
			t.Fatalf("task JSON lacks the transitions: %s", j)
		}
		body := get(t, h, taskPath(idRetrying))
		i := strings.Index(body, `<table id="transitions">`)
		if i < 0 {
			t.Fatalf("task page has no transitions table:\n%s", body)
		}
		table := body[i : i+strings.Index(body[i:], "</table>")]
		rows := strings.Split(table, `<tr class="transition">`)[1:]
		want := [][]string{
			{`<td class="kind">attempt</td>`, `<td class="what">failed</td>`, `state-running">running</span> → <span class="state state-retrying">retrying</span>`, `<td class="by">host-a-1</td>`, "<code>" + trace + "</code>"},
			{`<td class="kind">operator</td>`, `<td class="what">force_fail</td>`, `state-retrying">retrying</span> → <span class="state state-dead">dead</span>`, `<td class="by">alice</td>`, `<td class="trace">-</td>`},
		}
		if len(rows) != len(want) {
			t.Fatalf("%d transitions, want %d:\n%s", len(rows), len(want), table)
		}
		for k, w := range want {
			for _, cell := range w {
				if !strings.Contains(rows[k], cell) {
					t.Fatalf("transition %d lacks %q:\n%s", k+1, cell, rows[k])
				}
			}
		}
	})
}
