package console_test

// End-to-end tests of the console as an operator uses it: a real headless
// Chromium (internal/testbrowser) on the console served on loopback, over a
// running runtime on SQLite and MariaDB. The fixture is in
// browser_fixture_test.go. Run with -update-screenshots to refresh the PNGs
// of docs/screenshots/ that README shows.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testbrowser"
	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/runtime"
)

// TestConsoleInBrowser walks the console as an operator does: the overview
// and its charts, a filter down to one dead task, a discard asked for by
// alice and approved by bob, a bulk requeue through its confirmation, a task
// page and the overview refreshing themselves, stored XSS payloads that
// stay text, and a running attempt cancelled from its task page. SQLite gets every step; MariaDB the steps that write.
func TestConsoleInBrowser(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			e := newE2E(t, b.DSN)
			full := b.Name == "sqlite"
			e.screenshots = full
			if full {
				e.checkOverview()
				e.checkTaskDetails()
			}
			e.filterAndDiscardWithReview()
			e.bulkRequeue(full)
			if full {
				e.liveRefresh()
				e.storedXSSStaysText()
			}
			e.cancelRunning()
		})
	}
}

// checkOverview: the state counts and both charts, drawn.
func (e *e2e) checkOverview() {
	t := e.t
	t.Log("overview")
	tab := e.as("alice")
	tab.Navigate(e.base)
	tab.WaitUntil("both charts to be drawn", refreshTimeout,
		`document.querySelector("#chart-outcomes")?.dataset.rendered === "true" &&
		 document.querySelector("#chart-lateness")?.dataset.rendered === "true"`)

	for _, c := range []struct {
		name, tenant string
		state        runtime.State
		want         string
	}{
		{"billing.ChargeCard", "acme", runtime.StateDead, "3"},
		{"mail.SendReceipt", "acme", runtime.StateSucceeded, "6"},
		{"shipping.Dispatch", "-", runtime.StateBlocked, "1"},
		{"ledger.Sync", "acme", runtime.StateRetrying, "1"},
		{"reports.Nightly", "-", runtime.StatePending, "1"},
	} {
		if got := stateCount(tab, c.name, c.tenant, c.state); got != c.want {
			t.Errorf("#state-counts %s/%s %s = %q; want %s", c.name, c.tenant, c.state, got, c.want)
		}
	}
	if got := tab.Text("#instances"); !strings.Contains(got, e.rt.InstanceID()) {
		t.Errorf("#instances = %q; want this runtime's instance %s", got, e.rt.InstanceID())
	}
	if got := tab.Text("#unrunnable-names"); !strings.Contains(got, "legacy.Unregistered") {
		t.Errorf("#unrunnable-names = %q; want legacy.Unregistered (due, never registered)", got)
	}
	e.screenshot(tab, "console-overview.png")
}

// checkTaskDetails: a task page shows the trace id (linked through
// TraceURL), the tenant and the dependencies up and down.
func (e *e2e) checkTaskDetails() {
	t := e.t
	t.Log("task page details")
	tab := e.as("alice")
	tab.Navigate(e.taskURL(e.traced))
	if got := tab.Text("#trace-id"); !strings.Contains(got, traceIDHex) {
		t.Errorf("#trace-id = %q; want %s", got, traceIDHex)
	}
	if href := tab.Attr("#trace-id a", "href"); !strings.HasSuffix(href, "/traces/"+traceIDHex) {
		t.Errorf("#trace-id link = %q; want TraceURL with the trace id", href)
	}
	if got := tab.Text("#task-state"); !strings.Contains(got, "succeeded") {
		t.Errorf("#task-state = %q; want succeeded", got)
	}
	if body := testbrowser.Eval[string](tab, `document.body.innerText`); !strings.Contains(body, "acme") {
		t.Errorf("the task page does not show the tenant acme")
	}

	tab.Navigate(e.taskURL(e.downstream))
	if got := tab.Text("#task-state"); !strings.Contains(got, "blocked") {
		t.Errorf("#task-state of the dependent task = %q; want blocked", got)
	}
	if got := tab.Text("#deps-up"); !strings.Contains(got, fmt.Sprint(e.upstream)) {
		t.Errorf("#deps-up of task %d = %q; want its upstream task %d", e.downstream, got, e.upstream)
	}
	tab.Navigate(e.taskURL(e.upstream))
	if got := tab.Text("#deps-down"); !strings.Contains(got, fmt.Sprint(e.downstream)) {
		t.Errorf("#deps-down of task %d = %q; want its downstream task %d", e.upstream, got, e.downstream)
	}
}

// filterAndDiscardWithReview: filter the list to the dead courier task
// through the form, open it, alice asks for its discard with a reason, bob
// approves, both are in the trail.
func (e *e2e) filterAndDiscardWithReview() {
	t := e.t
	t.Log("filter to a dead task, discard with a reason, approve as a second operator")
	alice := e.as("alice")
	alice.Navigate(e.base + "tasks")
	if ids := listedIDs(alice); !containsID(ids, e.courier) || len(ids) < 5 {
		t.Fatalf("unfiltered list rows %v; want several, the courier task %d among them", ids, e.courier)
	}
	e.screenshot(alice, "console-tasks.png")
	alice.SetValue(`#task-filter [name=state]`, "dead")
	alice.SetValue(`#task-filter [name=name]`, "BookCourier")
	alice.ClickAndWaitLoad(`#task-filter [type=submit]`)
	if ids := listedIDs(alice); len(ids) != 1 || !containsID(ids, e.courier) {
		t.Fatalf("list filtered to dead BookCourier tasks has rows %v; want only %d", ids, e.courier)
	}
	if got := alice.Text("#task-count"); got != "1" {
		t.Errorf("#task-count = %q; want 1", got)
	}
	alice.ClickAndWaitLoad(fmt.Sprintf(`#task-table tr[data-task-id="%d"] a.task-link`, e.courier))
	if got := alice.Text("#task-state"); !strings.Contains(got, "dead") {
		t.Errorf("#task-state = %q; want dead", got)
	}
	if got := alice.Text("#task-args"); !strings.Contains(got, `"depot": "Leipzig"`) && !strings.Contains(got, `"depot":"Leipzig"`) {
		t.Errorf("#task-args = %q; want the arguments", got)
	}
	attempts, err := e.in.Attempts(context.Background(), e.courier)
	if err != nil {
		t.Fatal(err)
	}
	if n := alice.Count("#attempts li.attempt"); n != len(attempts) {
		t.Errorf("%d li.attempt in #attempts; want %d (the attempt and the fallback's record)", n, len(attempts))
	}
	if got := alice.Text("#attempts"); !strings.Contains(got, "depot closed") {
		t.Errorf("#attempts = %q; want the attempt's error", got)
	}

	const reason = "customer cancelled SO-77; courier booked by phone"
	alice.SetValue(`#action-discard-request textarea[name=reason]`, reason)
	alice.ClickAndWaitLoad(`#action-discard-request [type=submit]`)
	if got := alice.Text("#flash"); got == "" {
		t.Errorf("no #flash after the discard request")
	}
	if s := e.state(e.courier); s != runtime.StateDead {
		t.Fatalf("after alice's request the task is %s; want it still dead until a second operator approves", s)
	}
	if n := alice.Count("#trail tr.trail-entry"); n != 1 {
		t.Errorf("%d trail entries after the request; want 1", n)
	}

	bob := e.as("bob")
	bob.Navigate(e.taskURL(e.courier))
	bob.SetValue(`#action-discard-approve textarea[name=reason]`, "checked with the depot")
	bob.ClickAndWaitLoad(`#action-discard-approve [type=submit]`)
	e.waitState(e.courier, runtime.StateDiscarded)
	if got := bob.Text("#task-state"); !strings.Contains(got, "discarded") {
		t.Errorf("#task-state after approval = %q; want discarded", got)
	}
	entries := testbrowser.Eval[[]string](bob,
		`Array.from(document.querySelectorAll("#trail tr.trail-entry"), r => r.innerText.replace(/\s+/g, " "))`)
	if len(entries) != 2 {
		t.Fatalf("trail entries %q; want 2 (alice's request, bob's approval)", entries)
	}
	if !strings.Contains(entries[0]+entries[1], "alice") || !strings.Contains(entries[0]+entries[1], "bob") ||
		!strings.Contains(entries[0]+entries[1], reason) {
		t.Errorf("trail entries %q; want alice's request with its reason and bob's approval", entries)
	}
	trail, err := e.in.Trail(context.Background(), e.courier)
	if err != nil {
		t.Fatal(err)
	}
	var who []string
	for _, a := range trail {
		who = append(who, a.Operator+":"+a.Action)
	}
	if len(trail) != 2 || trail[0].Operator != "alice" || trail[1].Operator != "bob" {
		t.Errorf("stored trail %v; want alice's request then bob's approval", who)
	}
	if e.screenshots && *updateScreenshots {
		bob.Navigate(e.taskURL(e.courier))
		e.screenshot(bob, "console-task.png")
	}
}

// bulkRequeue: the dead ChargeCard tasks requeued in bulk, through the
// confirmation page, which counts the rows the requeue then touches.
func (e *e2e) bulkRequeue(full bool) {
	t := e.t
	t.Log("bulk requeue through the confirmation page")
	tab := e.as("alice")
	tab.Navigate(e.base + "tasks?state=dead&name=billing.ChargeCard")
	ids := listedIDs(tab)
	for _, id := range e.charges {
		if !containsID(ids, id) {
			t.Fatalf("list of dead ChargeCard tasks has rows %v; want %v", ids, e.charges)
		}
	}
	if tab.Exists(`#bulk-requeue textarea[name=reason]`) {
		tab.SetValue(`#bulk-requeue textarea[name=reason]`, "card processor fixed")
	}
	tab.ClickAndWaitLoad(`#bulk-requeue [type=submit]`)
	count := tab.Text("#confirm-count")
	for _, id := range e.charges {
		if links, err := e.in.Links(context.Background(), id); err != nil || links.To != 0 {
			t.Fatalf("task %d requeued (links %+v, err %v) before the confirmation", id, links, err)
		}
	}
	tab.ClickAndWaitLoad(`#confirm-button`)
	requeued := 0
	for _, id := range e.charges {
		links, err := e.in.Links(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if links.To != 0 {
			requeued++
		}
	}
	if requeued != len(e.charges) || count != fmt.Sprint(requeued) {
		t.Errorf("#confirm-count said %q; %d of the %d dead ChargeCard tasks were requeued; want all, and the count to match",
			count, requeued, len(e.charges))
	}
	if got := tab.Text("#flash"); got == "" {
		t.Errorf("no #flash after the bulk requeue")
	}
	trail, err := e.in.Trail(context.Background(), e.charges[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(trail) != 1 || trail[0].Operator != "alice" || trail[0].Action != runtime.ActionRequeue {
		t.Errorf("trail of requeued task %d: %+v; want one requeue by alice", e.charges[0], trail)
	}
}

// liveRefresh: a task page and the overview show a change made in the
// database without a reload.
func (e *e2e) liveRefresh() {
	t := e.t
	t.Log("live refresh")
	tab := e.as("alice")
	tab.Navigate(e.taskURL(e.nightly))
	if got := tab.Text("#task-state"); !strings.Contains(got, "pending") {
		t.Fatalf("#task-state = %q; want pending", got)
	}
	testbrowser.Eval[bool](tab, `window.__sameDocument = true`)
	if err := e.in.Discard(context.Background(), e.nightly, "report retired"); err != nil {
		t.Fatalf("discard: %v", err)
	}
	tab.WaitUntil("the task page to show the discard", refreshTimeout,
		`document.querySelector("#task-state").textContent.includes("discarded")`)
	// Its transitions table too: the discard, pending → discarded.
	tab.WaitUntil("the transitions table to show the discard", refreshTimeout,
		`Array.from(document.querySelectorAll("#transitions tr.transition")).some(r => r.querySelector(".what").textContent === "discard" && r.querySelector(".move").textContent === "pending → discarded")`)
	if !testbrowser.Eval[bool](tab, `window.__sameDocument === true`) {
		t.Errorf("the task page was reloaded; want it refreshed in place")
	}

	tab.Navigate(e.base)
	tab.WaitUntil("the overview's state counts", refreshTimeout, `document.querySelector("#state-counts")`)
	testbrowser.Eval[bool](tab, `window.__sameDocument = true`)
	if got := stateCount(tab, "inventory.Reserve", "globex", runtime.StateSucceeded); got != "0" {
		t.Fatalf("#state-counts inventory.Reserve/globex succeeded = %q before it ran; want 0", got)
	}
	if err := e.in.RunNow(context.Background(), e.upstream, "stock arrived"); err != nil {
		t.Fatalf("run now: %v", err)
	}
	e.waitState(e.upstream, runtime.StateSucceeded)
	deadline := time.Now().Add(refreshTimeout)
	for stateCount(tab, "inventory.Reserve", "globex", runtime.StateSucceeded) != "1" {
		if time.Now().After(deadline) {
			t.Fatalf("the overview still counts %q succeeded inventory.Reserve tasks %v after it ran; want 1 without a reload",
				stateCount(tab, "inventory.Reserve", "globex", runtime.StateSucceeded), refreshTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !testbrowser.Eval[bool](tab, `window.__sameDocument === true`) {
		t.Errorf("the overview was reloaded; want it refreshed in place")
	}
}

// storedXSSStaysText: the XSS payloads stored in a task's name, tenant,
// arguments and error are shown as text on the list, the task page and the
// overview; none runs, before or after a live refresh.
func (e *e2e) storedXSSStaysText() {
	t := e.t
	t.Log("stored XSS payloads")
	tab := e.as("alice")
	pages := []struct {
		name, url string
		live      string // the JSON its live refresh reads; "" for none
		text      []string
	}{
		{"list", e.base + "tasks", "", []string{"xss.Probe\"><img src=x", "evil<script>"}},
		{"filtered list", e.base + "tasks?state=dead&name=xss", "", []string{"xss.Probe\"><img src=x"}},
		{"task", e.taskURL(e.xss), fmt.Sprintf("api/tasks/%d.json", e.xss), []string{payloadScript, `<img src=x onerror=`, "evil<script>"}},
		{"overview", e.base, "api/overview.json", []string{"xss.Probe\"><img src=x", "evil<script>"}},
	}
	for _, p := range pages {
		from := len(tab.Requests())
		tab.Navigate(p.url)
		e.checkNoXSS(tab, p.name, p.text)
		if p.live != "" {
			// The second refresh request is sent after the first answer
			// was rendered: check again after it.
			tab.WaitRequests(p.name+"'s live refresh", from, p.live, 2, 3*refreshTimeout/2)
			e.checkNoXSS(tab, p.name+" after a live refresh", p.text)
		}
	}
}

// checkNoXSS checks that no payload ran or became markup on tab's page, and
// that texts are on it as text.
func (e *e2e) checkNoXSS(tab *testbrowser.Tab, page string, texts []string) {
	t := e.t
	t.Helper()
	if ran := testbrowser.Eval[string](tab, `String(window.__xss)`); ran != "undefined" {
		t.Errorf("%s: a stored payload ran (window.__xss = %s)", page, ran)
	}
	for _, sel := range []string{`img[src="x"]`, `script:not([src])`, `[onerror]`, `[onmouseover]`} {
		if n := tab.Count(sel); n != 0 {
			t.Errorf("%s: %d elements %s: a stored payload became markup", page, n, sel)
		}
	}
	body := testbrowser.Eval[string](tab, `document.body.innerText`)
	for _, s := range texts {
		if !strings.Contains(body, s) {
			t.Errorf("%s: the page does not show %q as text", page, s)
		}
	}
	if d := tab.Dialogs(); len(d) != 0 {
		t.Errorf("%s: dialogs opened: %q", page, d)
	}
	if p := tab.Problems(); len(p) != 0 {
		t.Errorf("%s: the page reported errors (a CSP violation is a blocked payload): %q", page, p)
	}
}
