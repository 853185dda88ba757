package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/argo-retry/argo/console"
	"github.com/argo-retry/argo/runtime"
)

// trail is the operator trail of a task as "action operator reason" lines.
func (e *env) trail(id int64) []string {
	e.t.Helper()
	acts, err := e.in.Trail(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, a := range acts {
		out = append(out, a.Action+" "+a.Operator+" "+a.Reason)
	}
	return out
}

func taskPath(id int64) string { return "/tasks/" + strconv.FormatInt(id, 10) }

// act posts an action on task id as operator and follows the redirect.
func act(t *testing.T, h http.Handler, id int64, action, operator, reason string) response {
	t.Helper()
	r := post(t, h, taskPath(id)+"/"+action, operator, url.Values{"reason": {reason}})
	if r.status != http.StatusSeeOther {
		return r
	}
	loc := r.header.Get("Location")
	want := "../" + strconv.FormatInt(id, 10) + "?flash="
	if !strings.HasPrefix(loc, want) {
		t.Fatalf("%s %d: redirect to %q, want %q…", action, id, loc, want)
	}
	return do(t, h, "GET", taskPath(id)+strings.TrimPrefix(loc, "../"+strconv.FormatInt(id, 10)), operator, nil)
}

// TestSingleActions: each action changes its task, is recorded in the
// trail as the authenticated operator, and the page then shows #flash;
// a refused action shows why and changes nothing.
func TestSingleActions(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		h := e.handler(console.Options{AllowWrites: true, SingleOperatorDiscard: true})

		r := act(t, h, idDead, "requeue", "alice", "firmware fixed")
		if r.status != http.StatusOK || !regexp.MustCompile(`<p id="flash" class="flash" role="status">Requeued: .* New task: \d+\.</p>`).MatchString(r.body) {
			t.Fatalf("requeue: %d\n%s", r.status, r.body)
		}
		links, _ := e.in.Links(context.Background(), idDead)
		if links.To == 0 || e.state(links.To) != runtime.StatePending {
			t.Fatalf("requeue made no pending task: %+v", links)
		}
		if got := e.trail(idDead); len(got) != 1 || got[0] != "requeue alice firmware fixed" {
			t.Fatalf("trail after requeue: %q", got)
		}
		if !strings.Contains(r.body, `<tr class="trail-entry">`) || !strings.Contains(r.body, `<td class="operator">alice</td>`) {
			t.Error("the task page does not show the trail entry")
		}

		if r := act(t, h, idPending, "run", "bob", ""); r.status != http.StatusOK || !strings.Contains(r.body, `id="flash"`) {
			t.Fatalf("run: %d", r.status)
		}
		if got := e.trail(idPending); len(got) != 1 || got[0] != "run_now bob " {
			t.Fatalf("trail after run: %q", got)
		}

		// force-fail needs a reason, and a task no worker holds.
		if r := act(t, h, idRetrying, "force-fail", "bob", ""); r.status != http.StatusBadRequest || !strings.Contains(r.body, "force-fail needs a reason") {
			t.Fatalf("force-fail without reason: %d", r.status)
		}
		if e.state(idRetrying) != runtime.StateRetrying {
			t.Fatal("a refused force-fail changed the task")
		}
		if r := act(t, h, idRunning, "force-fail", "bob", "x"); r.status != http.StatusConflict || !strings.Contains(r.body, `class="flash flash-error"`) || !strings.Contains(r.body, "cannot go from running to dead") {
			t.Fatalf("force-fail of a running task: %d\n%s", r.status, r.body)
		}
		if r := act(t, h, idRetrying, "force-fail", "bob", "endpoint retired"); r.status != http.StatusOK || !strings.Contains(r.body, "Sent to the dead letter.") {
			t.Fatalf("force-fail: %d", r.status)
		}
		if e.state(idRetrying) != runtime.StateDead {
			t.Fatal("force-fail did not send the task to the dead letter")
		}

		if r := act(t, h, idDeadGlobex, "discard", "carol", ""); r.status != http.StatusBadRequest {
			t.Fatalf("discard without reason: %d", r.status)
		}
		if r := act(t, h, idDeadGlobex, "discard", "carol", "customer left"); r.status != http.StatusOK || !strings.Contains(r.body, "Discarded.") {
			t.Fatalf("discard: %d", r.status)
		}
		if e.state(idDeadGlobex) != runtime.StateDiscarded {
			t.Fatal("discard did not discard")
		}
		if r := post(t, h, taskPath(idPending)+"/explode", "bob", url.Values{}); r.status != http.StatusNotFound {
			t.Fatalf("unknown action: %d", r.status)
		}
	})
}

// TestReviewedDiscard: by default (two people) the page offers a
// discard request, not a discard; the requester cannot approve it; another
// operator can; a rejection leaves the task as it was.
func TestReviewedDiscard(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		h := e.handler(console.Options{AllowWrites: true})
		body := do(t, h, "GET", taskPath(idDeadGlobex), "alice", nil).body
		if strings.Contains(body, `id="action-discard"`) || !strings.Contains(body, `id="action-discard-request"`) {
			t.Fatal("with approval the page must offer a discard request, not a discard")
		}
		if r := post(t, h, taskPath(idDeadGlobex)+"/discard", "alice", url.Values{"reason": {"x"}}); r.status != http.StatusConflict || !strings.Contains(r.body, "second operator") {
			t.Fatalf("discard with approval on: %d", r.status)
		}
		if r := act(t, h, idDeadGlobex, "discard-request", "alice", "order cancelled"); r.status != http.StatusOK || !strings.Contains(r.body, "Discard requested") {
			t.Fatalf("discard-request: %d", r.status)
		}
		if e.state(idDeadGlobex) != runtime.StateDead {
			t.Fatal("a discard request changed the task")
		}
		body = do(t, h, "GET", taskPath(idDeadGlobex), "alice", nil).body
		if !strings.Contains(body, `id="open-discard-request"`) || !strings.Contains(body, `id="action-discard-approve"`) || !strings.Contains(body, `id="action-discard-reject"`) {
			t.Fatal("the page does not show the open request and its decision forms")
		}
		if r := act(t, h, idDeadGlobex, "discard-approve", "alice", ""); r.status != http.StatusConflict || !strings.Contains(r.body, "another operator") {
			t.Fatalf("approval by the requester: %d\n%s", r.status, r.body)
		}
		if e.state(idDeadGlobex) != runtime.StateDead {
			t.Fatal("the requester's own approval changed the task")
		}
		if r := act(t, h, idDeadGlobex, "discard-approve", "bob", "checked"); r.status != http.StatusOK || !strings.Contains(r.body, "Discard approved") {
			t.Fatalf("approval by bob: %d", r.status)
		}
		if e.state(idDeadGlobex) != runtime.StateDiscarded {
			t.Fatal("bob's approval did not discard")
		}
		if got := e.trail(idDeadGlobex); len(got) != 2 || got[0] != "discard_request alice order cancelled" || got[1] != "discard_approve bob checked" {
			t.Fatalf("trail: %q", got)
		}

		act(t, h, idPending, "discard-request", "alice", "duplicate")
		if r := act(t, h, idPending, "discard-reject", "bob", "not a duplicate"); r.status != http.StatusOK || !strings.Contains(r.body, "Discard rejected") {
			t.Fatalf("reject: %d", r.status)
		}
		if e.state(idPending) != runtime.StatePending {
			t.Fatal("a rejected discard changed the task")
		}
	})
}

// TestBulkActions: the first POST changes nothing and shows how many tasks
// the action will touch; the confirmed POST touches exactly that many.
func TestBulkActions(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		h := e.handler(console.Options{AllowWrites: true, SingleOperatorDiscard: true})
		filter := url.Values{"name": {"bulk.Sweep"}, "state": {"dead"}, "reason": {"sweep"}}

		r := post(t, h, "/tasks/bulk/requeue", "alice", filter)
		m := regexp.MustCompile(`<b id="confirm-count">(\d+)</b>`).FindStringSubmatch(r.body)
		if r.status != http.StatusOK || m == nil || m[1] != strconv.Itoa(bulkCount) || !strings.Contains(r.body, `id="confirm-button"`) {
			t.Fatalf("bulk requeue confirmation: %d %q\n%s", r.status, m, r.body)
		}
		for i := range bulkCount {
			if s := e.state(int64(idBulkFirst + i)); s != runtime.StateDead || len(e.trail(int64(idBulkFirst+i))) != 0 {
				t.Fatalf("the confirmation page changed task %d", idBulkFirst+i)
			}
		}
		// The confirmation form carries the filter, the reason and confirm=1.
		confirm := confirmForm(t, r.body)
		if confirm.Get("confirm") != "1" || confirm.Get("name") != "bulk.Sweep" || confirm.Get("reason") != "sweep" {
			t.Fatalf("confirmation form carries %v", confirm)
		}
		r = post(t, h, "/tasks/bulk/requeue", "alice", confirm)
		if r.status != http.StatusOK || !strings.Contains(r.body, `<p id="flash" class="flash" role="status">Requeued: 30 tasks.</p>`) {
			t.Fatalf("bulk requeue: %d\n%s", r.status, r.body)
		}
		for i := range bulkCount {
			if got := e.trail(int64(idBulkFirst + i)); len(got) != 1 || got[0] != "requeue alice sweep" {
				t.Fatalf("task %d trail: %q", idBulkFirst+i, got)
			}
		}

		// Discard of the dead labels.Print: one task (idDeadGlobex).
		filter = url.Values{"name": {"labels"}, "reason": {"printer gone"}}
		r = post(t, h, "/tasks/bulk/discard", "bob", filter)
		if !strings.Contains(r.body, `<b id="confirm-count">1</b>`) {
			t.Fatalf("bulk discard confirmation:\n%s", r.body)
		}
		if e.state(idDeadGlobex) != runtime.StateDead {
			t.Fatal("the confirmation page discarded")
		}
		if r := post(t, h, "/tasks/bulk/discard", "bob", confirmForm(t, r.body)); !strings.Contains(r.body, "Discarded: 1 task.") {
			t.Fatalf("bulk discard: %s", r.body)
		}
		if e.state(idDeadGlobex) != runtime.StateDiscarded || e.state(idSucceeded) != runtime.StateSucceeded || e.state(idRunning) != runtime.StateRunning {
			t.Fatal("bulk discard touched the wrong tasks")
		}
		if r := post(t, h, "/tasks/bulk/discard", "bob", url.Values{"name": {"labels"}}); r.status != http.StatusBadRequest || !strings.Contains(r.body, "needs a reason") {
			t.Fatalf("bulk discard without reason: %d", r.status)
		}
	})
}

// TestBulkDiscardRequests: by default (two people) a bulk discard asks
// for the discard of each task, and touches none.
func TestBulkDiscardRequests(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		h := e.handler(console.Options{AllowWrites: true})
		form := url.Values{"name": {"warehouse"}, "reason": {"cleanup"}}
		r := post(t, h, "/tasks/bulk/discard", "alice", form)
		if !strings.Contains(r.body, `<b id="confirm-count">3</b>`) { // dead, retrying, pending
			t.Fatalf("confirmation:\n%s", r.body)
		}
		if r := post(t, h, "/tasks/bulk/discard", "alice", confirmForm(t, r.body)); !strings.Contains(r.body, "Discard requested for: 3 tasks.") {
			t.Fatalf("bulk request: %s", r.body)
		}
		for _, id := range []int64{idDead, idRetrying, idPending} {
			reqs, _ := e.in.DiscardRequests(context.Background(), id)
			if len(reqs) != 1 || reqs[0].RequestedBy != "alice" {
				t.Fatalf("task %d requests: %+v", id, reqs)
			}
		}
		if e.state(idDead) != runtime.StateDead || e.state(idPending) != runtime.StatePending {
			t.Fatal("a bulk discard request changed tasks")
		}
	})
}

// TestBulkCap: one bulk action touches at most BulkCap tasks, and the
// confirmation says so.
func TestBulkCap(t *testing.T) {
	e := newEnv(t, sqliteDSN(t))
	h := e.handler(console.Options{AllowWrites: true, BulkCap: 5})
	form := url.Values{"name": {"bulk.Sweep"}}
	r := post(t, h, "/tasks/bulk/requeue", "alice", form)
	if !strings.Contains(r.body, `<b id="confirm-count">5</b>`) || !strings.Contains(r.body, "one bulk action touches at most 5") {
		t.Fatalf("confirmation past the cap:\n%s", r.body)
	}
	if r := post(t, h, "/tasks/bulk/requeue", "alice", confirmForm(t, r.body)); !strings.Contains(r.body, "Requeued: 5 tasks.") {
		t.Fatalf("bulk requeue past the cap: %s", r.body)
	}
	requeued := 0
	for i := range bulkCount {
		if len(e.trail(int64(idBulkFirst+i))) == 1 {
			requeued++
		}
	}
	if requeued != 5 {
		t.Fatalf("requeued %d tasks, want the cap 5", requeued)
	}
}

// TestFlashIsFixedText: the flash shown after a redirect is one of the
// console's own messages, never text from the URL.
func TestFlashIsFixedText(t *testing.T) {
	e := newEnv(t, sqliteDSN(t))
	h := e.handler(console.Options{})
	if body := get(t, h, "/tasks/1?flash="+url.QueryEscape(xssScript)); strings.Contains(body, `id="flash"`) {
		t.Error("an unknown flash code shows a flash")
	}
	body := get(t, h, "/tasks/1?flash=requeued&new="+url.QueryEscape("7"+xssImg))
	if !strings.Contains(body, `<p id="flash" class="flash" role="status">Requeued: the call runs again as a new task; this row stays as it was.</p>`) {
		t.Errorf("flash with a bad new id:\n%s", body)
	}
}

// confirmForm is the form of a confirmation page: the filter, the reason,
// the bound of the set it counted, and confirm=1.
func confirmForm(t *testing.T, body string) url.Values {
	t.Helper()
	if !strings.Contains(body, `id="confirm-button"`) {
		t.Fatalf("not a confirmation page with a button:\n%s", body)
	}
	form := url.Values{}
	for _, in := range regexp.MustCompile(`<input type="hidden" name="([a-z]+)" value="([^"]*)">`).FindAllStringSubmatch(body, -1) {
		form.Set(in[1], html.UnescapeString(in[2]))
	}
	return form
}

// TestBulkLeavesLaterTasks: a task written between the confirmation and
// the confirmed POST is not touched, though the filter selects it.
func TestBulkLeavesLaterTasks(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		h := e.handler(console.Options{AllowWrites: true})
		r := post(t, h, "/tasks/bulk/requeue", "alice", url.Values{"name": {"bulk.Sweep"}})
		if !strings.Contains(r.body, `<b id="confirm-count">30</b>`) {
			t.Fatalf("confirmation:\n%s", r.body)
		}
		e.insert(seedRow{id: 500, name: "bulk.Sweep", state: runtime.StateDead, tenant: "acme", params: `{}`})
		if r := post(t, h, "/tasks/bulk/requeue", "alice", confirmForm(t, r.body)); !strings.Contains(r.body, "Requeued: 30 tasks.") {
			t.Fatalf("bulk requeue: %s", r.body)
		}
		if len(e.trail(500)) != 0 {
			t.Fatal("a task written after the confirmation was requeued")
		}
		form := url.Values{"name": {"bulk.Sweep"}, "confirm": {"1"}}
		if r := post(t, h, "/tasks/bulk/requeue", "alice", form); r.status != http.StatusBadRequest || !strings.Contains(r.body, "confirm from the confirmation page") {
			t.Fatalf("confirmed POST without upto: %d", r.status)
		}
	})
}
