package console_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/argo-retry/argo/console"
	"github.com/argo-retry/argo/runtime"
)

// TestRefusedActionsCounted: an action the state machine refuses (the
// force-fail of a running task) is counted in the database as the
// console's (argo_refused_transition, which every instance's metrics
// report as argo_operator_transitions_refused_total); an accepted one and
// one refused for its input (no reason) are not.
func TestRefusedActionsCounted(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		h := e.handler(console.Options{AllowWrites: true})
		for range 2 {
			if r := act(t, h, idRunning, "force-fail", "bob", "x"); r.status != http.StatusConflict {
				t.Fatalf("force-fail of a running task: %d", r.status)
			}
		}
		if r := act(t, h, idRetrying, "force-fail", "bob", ""); r.status != http.StatusBadRequest {
			t.Fatalf("force-fail without reason: %d", r.status)
		}
		if r := act(t, h, idRetrying, "force-fail", "bob", "endpoint retired"); r.status != http.StatusOK {
			t.Fatalf("force-fail: %d", r.status)
		}
		got, err := e.in.RefusedTransitions(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := []runtime.RefusedTransition{{Source: "console", From: "running", To: "dead", Refused: 2}}
		if !slices.Equal(got, want) {
			t.Fatalf("counts %+v, want %+v", got, want)
		}
	})
}

// TestErrorCodeShownAndFiltered: the task page shows the task's error code
// and each attempt's (in the page and its live JSON); the list filters by
// code exactly, and a code runtime.Coded would refuse is a 400 saying what
// a code is.
func TestErrorCodeShownAndFiltered(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		for _, q := range []string{
			"UPDATE argo_task SET error_code = 'PAY_TIMEOUT' WHERE id = 1",
			"UPDATE argo_task SET error_code = 'pay_timeout' WHERE id = 2",
			"INSERT INTO argo_task_attempt (task_pk, attempt, kind, worker, started_at, finished_at, outcome, error_msg, backoff_ms, error_code) VALUES (1, 1, 'attempt', 'w', 1, 2, 'failed', 'timeout', 0, 'PAY_TIMEOUT')",
		} {
			if _, err := e.db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		h := e.handler(console.Options{})
		body := get(t, h, taskPath(idDead))
		if !strings.Contains(body, `<code id="task-error-code" class="error-code">PAY_TIMEOUT</code>`) || !strings.Contains(body, `; code <code class="error-code">PAY_TIMEOUT</code>`) {
			t.Fatalf("task page lacks the codes:\n%s", body)
		}
		if body := get(t, h, taskPath(idRetrying)); !strings.Contains(body, `<code id="task-error-code" class="error-code">pay_timeout</code>`) {
			t.Fatal("task 2's page lacks its code")
		}
		if j := get(t, h, "/api/tasks/1.json"); !strings.Contains(j, `"error_code":"PAY_TIMEOUT"`) || !strings.Contains(j, `"code":"PAY_TIMEOUT"`) {
			t.Fatalf("task JSON lacks the codes: %s", j)
		}
		list := get(t, h, "/tasks?code=PAY_TIMEOUT")
		if !strings.Contains(list, `data-task-id="1"`) {
			t.Fatalf("list by code lacks task 1:\n%s", list)
		}
		if strings.Contains(list, `data-task-id="2"`) || strings.Count(list, `data-task-id="`) != 1 {
			t.Fatal("list by code PAY_TIMEOUT shows task 2 (pay_timeout)")
		}
		if r := do(t, h, "GET", "/tasks?code="+url.QueryEscape("PAY TIMEOUT"), "alice", nil); r.status != http.StatusBadRequest || !strings.Contains(r.body, "a code is 1 to 64 characters") {
			t.Fatalf("a bad code: %d\n%s", r.status, r.body)
		}
	})
}
