package console_test

// The fixture of the console's end-to-end tests (browser_test.go): a real
// runtime on a real database with tasks in the states an operator meets, the
// console served on loopback, and a headless Chromium with one tab per
// operator.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/argo-retry/argo/console"
	"github.com/argo-retry/argo/internal/testbrowser"
	"github.com/argo-retry/argo/runtime"
)

var updateScreenshots = flag.Bool("update-screenshots", false,
	"write PNGs of the console's overview, task list and task page to docs/screenshots/")

// screenshotDir is where -update-screenshots writes (relative to console/).
const screenshotDir = "../docs/screenshots"

// stateTimeout bounds every wait for a task to reach a state.
const stateTimeout = 30 * time.Second

// refreshTimeout bounds a wait for a page's live refresh (every 5 s) to show
// a change: a few refresh periods.
const refreshTimeout = 20 * time.Second

// The operators and their passwords (HTTP basic auth).
var operators = map[string]string{"alice": "alice-pw", "bob": "bob-pw"}

// The XSS payloads stored in task names, tenants, arguments and error texts.
// Each would, if it ran, set window.__xss or open a dialog.
const (
	payloadScript = `<script>window.__xss="script";alert("xss script")</script>`
	payloadImg    = `"><img src=x onerror="window.__xss='img';alert('xss img')">`
	payloadAttr   = `' onmouseover='window.__xss="attr"' x='`
)

// traceIDHex is the trace id of the traced task's submitting call.
const traceIDHex = "4bf92f3577b34da6a3ce929d0e0e4736"

// e2e is a console on a running runtime, seen through a headless Chromium.
type e2e struct {
	t       *testing.T
	rt      *runtime.Runtime
	in      *runtime.Inspector // unrestricted, as the test's own hand on the database
	srv     *httptest.Server
	base    string // the console's URL, ending in "/"
	browser *testbrowser.Browser
	tabs    map[string]*testbrowser.Tab
	// screenshots: this run writes docs/screenshots/ under -update-screenshots.
	screenshots bool

	// Tasks by role.
	charges    []int64 // billing.ChargeCard, tenant acme: dead (card declined)
	courier    int64   // shipping.BookCourier, tenant globex: dead, the one discarded
	xss        int64   // the XSS probe: dead, payloads in name, tenant, args and error
	retrying   int64   // ledger.Sync: retrying (next attempt in an hour)
	upstream   int64   // inventory.Reserve: pending, due in an hour
	downstream int64   // shipping.Dispatch, no tenant: blocked on upstream
	traced     int64   // mail.SendReceipt submitted inside a trace: succeeded
	nightly    int64   // reports.Nightly: pending, due in an hour (live refresh)
	orphan     int64   // legacy.Unregistered: due, no instance can run it
}

// xssName is the XSS probe's task name.
const xssName = "xss.Probe" + payloadImg

// newE2E starts a runtime on dsn with tasks in every state the tests need,
// serves the console on loopback and starts a browser. Each of configure
// changes the runtime's Config before it starts.
func newE2E(t *testing.T, dsn string, configure ...func(*runtime.Config)) *e2e {
	t.Helper()
	ctx := context.Background()
	cfg := runtime.Config{
		DSN:          dsn,
		AutoMigrate:  true,
		PollInterval: 20 * time.Millisecond,
		Logger:       slog.New(slog.DiscardHandler),
	}
	for _, c := range configure {
		c(&cfg)
	}
	rt, err := runtime.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start the runtime: %v", err)
	}
	t.Cleanup(func() { rt.Stop(context.Background()) })
	// The fixture's own changes "made in the database" (liveRefresh) are one
	// operator's: no review for them.
	in := rt.Inspector()
	in.SingleOperatorDiscard = true
	e := &e2e{t: t, rt: rt, in: in, tabs: map[string]*testbrowser.Tab{}}
	e.submitTasks(ctx)
	e.serve()
	e.browser = testbrowser.Start(t)
	return e
}

func fixed(attempts int) runtime.RetryPolicy {
	return runtime.RetryPolicy{MaxAttempts: attempts, Backoff: runtime.BackoffFixed, Initial: 10 * time.Millisecond}
}

func (e *e2e) submitTasks(ctx context.Context) {
	t := e.t
	charge := &runtime.TaskDef{
		Name: "billing.ChargeCard", Policy: fixed(2),
		Run: func(ctx context.Context, args []byte) error {
			return errors.New("card declined: insufficient funds")
		},
	}
	courier := &runtime.TaskDef{
		Name: "shipping.BookCourier", Policy: fixed(1),
		Run: func(ctx context.Context, args []byte) error {
			return runtime.Permanent(errors.New("courier API answered 503: depot closed"))
		},
	}
	probe := &runtime.TaskDef{
		Name: xssName, Policy: fixed(1),
		Run: func(ctx context.Context, args []byte) error {
			return runtime.Permanent(errors.New("upstream said " + payloadScript + payloadImg + payloadAttr))
		},
	}
	ledger := &runtime.TaskDef{
		Name:   "ledger.Sync",
		Policy: runtime.RetryPolicy{MaxAttempts: 5, Backoff: runtime.BackoffFixed, Initial: time.Hour},
		Run: func(ctx context.Context, args []byte) error {
			return errors.New("ledger timed out after 30s")
		},
	}
	succeed := func(ctx context.Context, args []byte) error { return nil }
	reserve := &runtime.TaskDef{Name: "inventory.Reserve", Policy: fixed(3), Run: succeed}
	dispatch := &runtime.TaskDef{Name: "shipping.Dispatch", Policy: fixed(3), Run: succeed}
	receipt := &runtime.TaskDef{Name: "mail.SendReceipt", Policy: fixed(3), Run: succeed}
	nightly := &runtime.TaskDef{Name: "reports.Nightly", Policy: fixed(3), Run: succeed}
	// Never registered: no instance can run it.
	unregistered := &runtime.TaskDef{Name: "legacy.Unregistered", Policy: fixed(3)}
	if err := e.rt.Register(charge, courier, probe, ledger, reserve, dispatch, receipt, nightly); err != nil {
		t.Fatalf("register: %v", err)
	}

	submit := func(ctx context.Context, c runtime.Call) int64 {
		t.Helper()
		id, err := e.rt.Submit(ctx, c)
		if err != nil {
			t.Fatalf("submit %s: %v", c.Task.Name, err)
		}
		return id
	}
	later := time.Now().Add(time.Hour)
	for i := 1; i <= 3; i++ {
		e.charges = append(e.charges, submit(ctx, runtime.Call{Task: charge, Tenant: "acme",
			Args: fmt.Appendf(nil, `{"order":"SO-%d","amount_cents":%d,"currency":"EUR"}`, 100+i, 1999*i)}))
	}
	e.courier = submit(ctx, runtime.Call{Task: courier, Tenant: "globex", UniqueKey: "SO-77",
		Args: []byte(`{"order":"SO-77","depot":"Leipzig","parcels":[{"kg":2.5},{"kg":11}]}`)})
	e.xss = submit(ctx, runtime.Call{Task: probe, Tenant: "evil" + payloadScript,
		Args: []byte(`{"note":` + jsonString(payloadScript) + `,"name":` + jsonString(payloadImg) + `,"attr":` + jsonString(payloadAttr) + `}`)})
	e.retrying = submit(ctx, runtime.Call{Task: ledger, Tenant: "acme", Args: []byte(`{"account":"4711"}`)})
	e.upstream = submit(ctx, runtime.Call{Task: reserve, Tenant: "globex", RunAt: later, Args: []byte(`{"sku":"LAMP-1","qty":2}`)})
	// Runs after the reservation; no tenant, so the overview also shows tasks without one.
	e.downstream = submit(ctx, runtime.Call{Task: dispatch, After: []int64{e.upstream}, Args: []byte(`{"order":"SO-88"}`)})
	e.nightly = submit(ctx, runtime.Call{Task: nightly, RunAt: later, Args: []byte(`{"report":"revenue"}`)})
	e.orphan = submit(ctx, runtime.Call{Task: unregistered, Args: []byte(`{}`)})

	traceID, _ := trace.TraceIDFromHex(traceIDHex)
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	traced := trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled,
	}))
	e.traced = submit(traced, runtime.Call{Task: receipt, Tenant: "acme", Args: []byte(`{"order":"SO-101","to":"ada@example.com"}`)})
	for i := 0; i < 5; i++ {
		submit(ctx, runtime.Call{Task: receipt, Tenant: "acme", Args: fmt.Appendf(nil, `{"order":"SO-%d"}`, 200+i)})
	}

	for _, id := range e.charges {
		e.waitState(id, runtime.StateDead)
	}
	e.waitState(e.courier, runtime.StateDead)
	e.waitState(e.xss, runtime.StateDead)
	e.waitState(e.retrying, runtime.StateRetrying)
	e.waitState(e.traced, runtime.StateSucceeded)
	e.waitState(e.upstream, runtime.StatePending)
	e.waitState(e.downstream, runtime.StateBlocked)
	e.waitState(e.nightly, runtime.StatePending)
}

// jsonString is s as a JSON string.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// waitState waits (within stateTimeout) until task id is in state want.
func (e *e2e) waitState(id int64, want runtime.State) {
	e.t.Helper()
	deadline := time.Now().Add(stateTimeout)
	for {
		task, err := e.in.Get(context.Background(), id)
		if err == nil && task.State == want {
			return
		}
		if time.Now().After(deadline) {
			got := "?"
			if task != nil {
				got = task.State.String()
			}
			e.t.Fatalf("task %d: still %s (err %v) after %v; want %s", id, got, err, stateTimeout, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// state returns task id's state now.
func (e *e2e) state(id int64) runtime.State {
	e.t.Helper()
	task, err := e.in.Get(context.Background(), id)
	if err != nil {
		e.t.Fatalf("get task %d: %v", id, err)
	}
	return task.State
}

// serve mounts the console at /console/ on a loopback server, writes on,
// two-person discards, operators from HTTP basic auth.
func (e *e2e) serve() {
	h, err := console.New(console.Options{
		Inspector:   e.rt.Inspector(),
		AllowWrites: true,
		TraceURL:    "/traces/{traceId}",
		Authenticate: func(r *http.Request) (string, bool) {
			user, pass, ok := r.BasicAuth()
			if !ok || operators[user] == "" || operators[user] != pass {
				return "", false
			}
			return user, true
		},
	})
	if err != nil {
		e.t.Fatalf("console.New: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console/", http.StripPrefix("/console", h))
	e.srv = httptest.NewServer(mux) // loopback
	e.t.Cleanup(e.srv.Close)
	e.base = e.srv.URL + "/console/"
}

// as returns the tab of operator name (opened on first use): its own
// browser context, and its credentials on every request.
func (e *e2e) as(name string) *testbrowser.Tab {
	if tab, ok := e.tabs[name]; ok {
		return tab
	}
	tab := e.browser.NewTab(testbrowser.WithBasicAuth(name, operators[name]))
	e.tabs[name] = tab
	return tab
}

// taskURL is the console's page of task id.
func (e *e2e) taskURL(id int64) string { return fmt.Sprintf("%stasks/%d", e.base, id) }

// listedIDs returns the task ids of the rows of #task-table on tab's page.
func listedIDs(tab *testbrowser.Tab) []string {
	return testbrowser.Eval[[]string](tab,
		`Array.from(document.querySelectorAll("#task-table tr[data-task-id]"), r => r.dataset.taskId)`)
}

// stateCount returns the text of the cell of #state-counts on tab's page
// in the row of task name and tenant ("-" for none) and the column of state
// (found by the header's text), or "no row" / "no column".
func stateCount(tab *testbrowser.Tab, name, tenant string, state runtime.State) string {
	return testbrowser.Eval[string](tab, fmt.Sprintf(`(() => {
		const col = Array.from(document.querySelectorAll("#state-counts thead th"), h => h.innerText.trim()).indexOf(%s);
		if (col < 0) return "no column";
		const row = Array.from(document.querySelectorAll("#state-counts tbody tr"))
			.find(r => r.cells.length > col && r.cells[0].innerText.trim() === %s && r.cells[1].innerText.trim() === %s);
		return row ? row.cells[col].innerText.trim() : "no row";
	})()`, jsonString(state.String()), jsonString(name), jsonString(tenant)))
}

// containsID reports whether ids has id.
func containsID(ids []string, id int64) bool { return slices.Contains(ids, fmt.Sprint(id)) }

// screenshot writes tab's viewport to docs/screenshots/name when the test
// runs with -update-screenshots (on the run that takes them).
func (e *e2e) screenshot(tab *testbrowser.Tab, name string) {
	t := e.t
	t.Helper()
	if !e.screenshots || !*updateScreenshots {
		return
	}
	png := tab.Screenshot()
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(screenshotDir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d KB)", path, len(png)/1024)
}
