package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/argo-retry/argo/console"
	"github.com/argo-retry/argo/runtime"
)

// TestCancelActions: the page of a running task offers the cancel (as it
// does a retrying one's), which needs a reason, ends the task discarded,
// records the attempt cancelled and who and why in the trail; a bulk cancel
// of a tenant's tasks confirms its count first and touches only those.
func TestCancelActions(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		h := e.handler(console.Options{AllowWrites: true})
		body := do(t, h, "GET", taskPath(idRunning), "alice", nil).body
		if !strings.Contains(body, `id="action-cancel"`) || !strings.Contains(body, "stop the running attempt") {
			t.Fatalf("the running task's page offers no cancel:\n%s", body)
		}
		if r := act(t, h, idRunning, "cancel", "alice", ""); r.status != http.StatusBadRequest {
			t.Fatalf("cancel without reason: %d", r.status)
		}
		if e.state(idRunning) != runtime.StateRunning {
			t.Fatal("a refused cancel changed the task")
		}
		r := act(t, h, idRunning, "cancel", "alice", "label stock withdrawn")
		if r.status != http.StatusOK || !strings.Contains(r.body, "Cancelled: the task ends discarded") {
			t.Fatalf("cancel: %d\n%s", r.status, r.body)
		}
		if e.state(idRunning) != runtime.StateDiscarded {
			t.Fatal("cancel did not end the task")
		}
		if got := e.trail(idRunning); len(got) != 1 || got[0] != "cancel alice label stock withdrawn" {
			t.Fatalf("trail after cancel: %q", got)
		}
		if !strings.Contains(r.body, runtime.OutcomeCancelled) {
			t.Error("the task page does not show the cancelled attempt")
		}
		if strings.Contains(r.body, `id="action-cancel"`) {
			t.Error("a cancelled task's page still offers the cancel")
		}
		if r := act(t, h, idSucceeded, "cancel", "alice", "x"); r.status != http.StatusConflict || !strings.Contains(r.body, "already finished") {
			t.Fatalf("cancel of a finished task: %d\n%s", r.status, r.body)
		}

		// Bulk: tenant acme's cancellable tasks.
		form := url.Values{"tenant": {"acme"}, "reason": {"tenant offboarded"}}
		r = post(t, h, "/tasks/bulk/cancel", "bob", form)
		if r.status != http.StatusOK || !strings.Contains(r.body, "Only pending, running, retrying, exhausted and blocked tasks are cancelled") {
			t.Fatalf("bulk cancel confirmation: %d\n%s", r.status, r.body)
		}
		if e.state(idRetrying) != runtime.StateRetrying {
			t.Fatal("the confirmation page cancelled")
		}
		if r := post(t, h, "/tasks/bulk/cancel", "bob", confirmForm(t, r.body)); !strings.Contains(r.body, "Cancelled: ") {
			t.Fatalf("bulk cancel: %s", r.body)
		}
		if e.state(idRetrying) != runtime.StateDiscarded || e.state(idPending) != runtime.StatePending || e.state(idDeadGlobex) != runtime.StateDead {
			t.Fatal("bulk cancel touched the wrong tasks")
		}
		if r := post(t, h, "/tasks/bulk/cancel", "bob", url.Values{"tenant": {"acme"}}); r.status != http.StatusBadRequest || !strings.Contains(r.body, "needs a reason") {
			t.Fatalf("bulk cancel without reason: %d", r.status)
		}
	})
}
