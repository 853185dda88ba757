package console_test

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/console"
	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/runtime"
)

// fixedNow is the clock of every test: the seeded rows are placed around it.
var fixedNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// The attacker-controlled texts every page must show escaped.
const (
	xssScript = `<script>alert(1)</script>`
	xssImg    = `"><img src=x onerror=alert(1)>`
)

// Seeded task ids. They are written explicitly: a database hands out
// auto-increment ids as it likes.
const (
	idDead       = 1 // warehouse.LightOn, dead, tenant acme, XSS in args, errors, key
	idRetrying   = 2 // warehouse.LightOn, retrying, held by an instance
	idPending    = 3 // warehouse.CallTruck, pending
	idSucceeded  = 4 // labels.Print, succeeded
	idDeadGlobex = 5 // labels.Print, dead, tenant globex
	idDiscarded  = 6 // labels.Print, discarded
	idRunning    = 7 // labels.Print, running under a lease
	idBulkFirst  = 100
	bulkCount    = 30 // ids 100..129: bulk.Sweep, dead, tenant acme
)

const traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

type seedRow struct {
	id                 int64
	name               string
	state              runtime.State
	execTimes, max     int
	params, errMsg     string
	tenant, trace, key string
	leaseOwner         string
	leaseUntil         time.Duration
	modified           time.Duration
	reason             string
	attempts           []seedAttempt
}

type seedAttempt struct {
	outcome, err string
	start        time.Duration
	backoffMs    int64
}

// env is a seeded database and an Inspector on it.
type env struct {
	t   *testing.T
	dsn string
	db  *sql.DB
	in  *runtime.Inspector
}

// newEnv migrates the database at dsn and seeds the rows the tests use.
func newEnv(t *testing.T, dsn string) *env {
	t.Helper()
	db, dialect, err := runtime.OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if _, err := runtime.Migrate(ctx, db, dialect); err != nil {
		t.Fatal(err)
	}
	in := runtime.NewInspector(db, dialect)
	in.Now = func() time.Time { return fixedNow }
	e := &env{t: t, dsn: dsn, db: db, in: in}
	xss := xssScript + xssImg
	rows := []seedRow{
		{id: idDead, name: "warehouse.LightOn", state: runtime.StateDead, execTimes: 3, max: 3, tenant: "acme", trace: traceParent, key: "C-11" + xssImg,
			params: `{"slot":"` + strings.ReplaceAll(xss, `"`, `\"`) + `","color":"blue"}`, errMsg: "HTTP 503 " + xss, modified: -10 * time.Minute,
			attempts: []seedAttempt{{runtime.OutcomeFailed, "timeout " + xss, -40 * time.Minute, 1000}, {runtime.OutcomeFailed, "HTTP 503", -30 * time.Minute, 2000}, {runtime.OutcomeFailed, "HTTP 503 " + xss, -10 * time.Minute, 0}}},
		{id: idRetrying, name: "warehouse.LightOn", state: runtime.StateRetrying, execTimes: 1, max: 5, tenant: "acme", params: `{"slot":"B-07"}`, errMsg: "connection refused",
			leaseOwner: "host-a-1", leaseUntil: time.Minute, modified: -5 * time.Minute, attempts: []seedAttempt{{runtime.OutcomeFailed, "connection refused", -5 * time.Minute, 4000}}},
		{id: idPending, name: "warehouse.CallTruck", state: runtime.StatePending, max: 4, params: `["dock-4",2]`, modified: -30 * time.Second},
		{id: idSucceeded, name: "labels.Print", state: runtime.StateSucceeded, execTimes: 1, max: 3, params: `{"label":"PKG-1"}`, modified: -50 * time.Minute},
		{id: idDeadGlobex, name: "labels.Print", state: runtime.StateDead, execTimes: 3, max: 3, tenant: "globex", params: `{"label":"PKG-2"}`, errMsg: "printer jammed", modified: -3 * time.Hour},
		{id: idDiscarded, name: "labels.Print", state: runtime.StateDiscarded, execTimes: 1, max: 3, params: `not json {`, errMsg: "printer offline", reason: "printer removed " + xss, modified: -2 * time.Hour},
		{id: idRunning, name: "labels.Print", state: runtime.StateRunning, execTimes: 1, max: 3, params: `{"label":"PKG-3"}`, leaseOwner: "host-b-2", leaseUntil: 30 * time.Second, modified: -time.Second},
	}
	for i := range bulkCount {
		rows = append(rows, seedRow{id: int64(idBulkFirst + i), name: "bulk.Sweep", state: runtime.StateDead, execTimes: 2, max: 2, tenant: "acme",
			params: `{"n":1}`, errMsg: "gone", modified: -time.Duration(i+1) * time.Minute})
	}
	for _, r := range rows {
		e.insert(r)
	}
	// A live instance that runs warehouse.LightOn only (and holds the
	// retry of idRetrying), and one that stopped heartbeating.
	for _, i := range []struct {
		id, names string
		heartbeat time.Duration
	}{{"host-a-1", "warehouse.LightOn", -time.Second}, {"host-old", "labels.Print", -time.Hour}} {
		if _, err := db.Exec(`INSERT INTO argo_instance (instance_id, heartbeat_at, started_at, task_names) VALUES (?, ?, ?, ?)`,
			i.id, fixedNow.Add(i.heartbeat).UnixMilli(), fixedNow.Add(-2*time.Hour).UnixMilli(), i.names); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *env) insert(r seedRow) {
	e.t.Helper()
	ms := func(d time.Duration) int64 { return fixedNow.Add(d).UnixMilli() }
	var key any
	if r.key != "" {
		key = r.key
	}
	lease := int64(0)
	if r.leaseUntil != 0 {
		lease = ms(r.leaseUntil)
	}
	const policy = `{"max_attempts":3,"backoff":"exponential","initial":1000000000,"multiplier":2}`
	_, err := e.db.Exec(`INSERT INTO argo_task (id, task_id, task_status, execute_times, max_attempts, execute_time, parameter_types, method_name, method_sign_name, task_parameter, error_msg, alert_expression, fallback_class_name, fallback_error_msg, shard_key, retry_policy, lease_owner, lease_until, unique_key, discard_reason, gmt_create, gmt_modified, tenant, trace_parent) VALUES (?, ?, ?, ?, ?, ?, '', '', '', ?, ?, '', '', '', 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.id, r.name, r.state, r.execTimes, r.max, ms(r.modified), r.params, r.errMsg, policy, r.leaseOwner, lease, key, r.reason, ms(r.modified-time.Hour), ms(r.modified), r.tenant, r.trace)
	if err != nil {
		e.t.Fatal(err)
	}
	for i, a := range r.attempts {
		if _, err := e.db.Exec(`INSERT INTO argo_task_attempt (task_pk, attempt, kind, worker, started_at, finished_at, outcome, error_msg, backoff_ms) VALUES (?, ?, 'attempt', 'host-a-1', ?, ?, ?, ?, ?)`,
			r.id, i+1, ms(a.start), ms(a.start+150*time.Millisecond), a.outcome, a.err, a.backoffMs); err != nil {
			e.t.Fatal(err)
		}
	}
}

// state reads a task's state.
func (e *env) state(id int64) runtime.State {
	e.t.Helper()
	task, err := e.in.Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return task.State
}

// operatorHeader names the operator in the tests' Authenticate.
const operatorHeader = "X-Test-Operator"

// handler is the console on e with opts (Inspector, Now and an
// Authenticate reading operatorHeader filled in when unset).
func (e *env) handler(opts console.Options) http.Handler {
	e.t.Helper()
	if opts.Inspector == nil {
		opts.Inspector = e.in
	}
	if opts.Now == nil {
		opts.Now = func() time.Time { return fixedNow }
	}
	if opts.Authenticate == nil {
		opts.Authenticate = func(r *http.Request) (string, bool) {
			op := r.Header.Get(operatorHeader)
			return op, op != ""
		}
	}
	h, err := console.New(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

// response is what a request answered.
type response struct {
	status int
	header http.Header
	body   string
}

// do sends a request to h as operator (none when "").
func do(t *testing.T, h http.Handler, method, target, operator string, form url.Values) response {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, target, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if operator != "" {
		req.Header.Set(operatorHeader, operator)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{rec.Code, rec.Header(), rec.Body.String()}
}

// get is a GET as operator alice that must answer 200.
func get(t *testing.T, h http.Handler, target string) string {
	t.Helper()
	r := do(t, h, "GET", target, "alice", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", target, r.status, r.body)
	}
	return r.body
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf is the CSRF token the page at target carries for operator.
func csrfOf(t *testing.T, h http.Handler, target, operator string) string {
	t.Helper()
	r := do(t, h, "GET", target, operator, nil)
	m := csrfInput.FindStringSubmatch(r.body)
	if m == nil {
		t.Fatalf("GET %s as %s: no csrf input (status %d)", target, operator, r.status)
	}
	return m[1]
}

// post sends form (with a valid CSRF token for operator) to target.
func post(t *testing.T, h http.Handler, target, operator string, form url.Values) response {
	t.Helper()
	form.Set("csrf", csrfOf(t, h, "/tasks", operator))
	return do(t, h, "POST", target, operator, form)
}

// backends runs fn on SQLite and MariaDB.
func backends(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { fn(t, newEnv(t, b.DSN)) })
	}
}

func sqliteDSN(t *testing.T) string { return testdb.SQLiteDSN(t) }

// rowIDs are the data-task-id of the list page's rows, in order.
func rowIDs(body string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`data-task-id="(\d+)"`).FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}
