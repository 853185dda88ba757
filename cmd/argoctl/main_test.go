package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/runtime"
	argosql "github.com/argo-retry/argo/sql"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fixedNow is the clock of every test: the seeded rows are placed around it.
var fixedNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	now = func() time.Time { return fixedNow }
	os.Exit(m.Run())
}

// ctl runs argoctl in-process with ARGO_DSN=dsn.
func ctl(t *testing.T, dsn string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		if k == "ARGO_DSN" {
			return dsn
		}
		return ""
	}
	code = run(context.Background(), args, &out, &errb, getenv)
	return out.String(), errb.String(), code
}

// mustCtl runs argoctl and fails the test unless it exits 0.
func mustCtl(t *testing.T, dsn string, args ...string) string {
	t.Helper()
	out, errOut, code := ctl(t, dsn, args...)
	if code != 0 {
		t.Fatalf("argoctl %s: exit %d\nstderr: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// failCtl runs argoctl, wants exit status code and one line on stderr
// containing want, and nothing on stdout.
func failCtl(t *testing.T, dsn string, code int, want string, args ...string) {
	t.Helper()
	out, errOut, got := ctl(t, dsn, args...)
	if got != code {
		t.Errorf("argoctl %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), got, code, out, errOut)
	}
	if !strings.HasPrefix(errOut, "argoctl: ") || strings.Count(errOut, "\n") != 1 || !strings.HasSuffix(errOut, "\n") {
		t.Errorf("argoctl %s: stderr is not one \"argoctl: \" line: %q", strings.Join(args, " "), errOut)
	}
	if !strings.Contains(errOut, want) {
		t.Errorf("argoctl %s: stderr %q lacks %q", strings.Join(args, " "), errOut, want)
	}
	if out != "" {
		t.Errorf("argoctl %s: unexpected stdout %q", strings.Join(args, " "), out)
	}
}

func openDB(t *testing.T, dsn string) (*sql.DB, string) {
	t.Helper()
	db, dialect, err := runtime.OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, dialect
}

func ms(d time.Duration) int64 { return fixedNow.Add(d).UnixMilli() }

type seedTask struct {
	name               string
	state              runtime.State
	execTimes, max     int
	due                time.Duration // relative to fixedNow
	shard              int
	errMsg, fbErr      string
	reason             string
	created, modified  time.Duration
	leaseOwner         string
	leaseUntil         time.Duration
	params             string
	fallback, alert    string
	attempts           []seedAttempt
	uniqueKey          any
	method, sig, types string
}

type seedAttempt struct {
	kind, outcome, err string
	start              time.Duration
	dur                time.Duration
	backoffMs          int64
}

// seed migrates the database and inserts fixed rows around fixedNow, with
// ids 1…8 in this order. The ids are written explicitly: the golden files
// show them, and a database hands out auto-increment ids as it likes (a
// Galera cluster 1, 4, 7; testdb's MySQL databases 2, 5, 8).
func seed(t *testing.T, dsn string) {
	t.Helper()
	db, dialect := openDB(t, dsn)
	ctx := context.Background()
	if _, err := runtime.Migrate(ctx, db, dialect); err != nil {
		t.Fatal(err)
	}
	fail := func(err string, start time.Duration, backoff int64) seedAttempt {
		return seedAttempt{kind: "attempt", outcome: runtime.OutcomeFailed, err: err, start: start, dur: 120 * time.Millisecond, backoffMs: backoff}
	}
	const policy = `{"max_attempts":5,"backoff":"exponential","initial":1000000000,"multiplier":2,"jitter":{"kind":"none"}}`
	tasks := []seedTask{
		{name: "warehouse.LightOn", state: runtime.StateSucceeded, execTimes: 1, max: 5, due: -50 * time.Minute, shard: 3, created: -50 * time.Minute, modified: -50 * time.Minute,
			params: `{"slot":"A-01","color":"green"}`, attempts: []seedAttempt{{kind: "attempt", outcome: runtime.OutcomeSucceeded, start: -50 * time.Minute, dur: 80 * time.Millisecond}}},
		{name: "warehouse.LightOn", state: runtime.StateRetrying, execTimes: 2, max: 5, due: -2 * time.Minute, shard: 7, created: -8 * time.Minute, modified: -5 * time.Minute,
			errMsg: "vehicle scheduler: dial tcp 10.0.0.7:443: connection refused", params: `{"slot":"B-07","color":"red"}`,
			attempts: []seedAttempt{fail("peripheral timeout", -8*time.Minute, 1000), fail("vehicle scheduler: dial tcp 10.0.0.7:443: connection refused", -5*time.Minute, 3000)}},
		{name: "warehouse.LightOn", state: runtime.StateDead, execTimes: 5, max: 5, due: -10 * time.Minute, shard: 3, created: -40 * time.Minute, modified: -10 * time.Minute,
			errMsg: "HTTP 503 from peripheral\n(retry later)", params: `{"slot":"C-11","color":"blue","note":"line\u00e9"}`,
			method: "(*Peripherals).LightOn", sig: "func(ctx context.Context, slot SlotID, color Color) error", types: "warehouse.SlotID,warehouse.Color",
			alert: "executeTimes >= 3", uniqueKey: "C-11",
			attempts: []seedAttempt{fail("HTTP 503 from peripheral", -40*time.Minute, 1000), fail("HTTP 503 from peripheral", -35*time.Minute, 2000),
				fail("HTTP 503 from peripheral", -30*time.Minute, 4000), fail("HTTP 503 from peripheral", -20*time.Minute, 8000), fail("HTTP 503 from peripheral\n(retry later)", -10*time.Minute, 0)}},
		{name: "warehouse.CallTruck", state: runtime.StatePending, max: 4, due: -30 * time.Second, shard: 12, created: -30 * time.Second, modified: -30 * time.Second, params: `["dock-4",2]`},
		{name: "warehouse.CallTruck", state: runtime.StateDead, execTimes: 4, max: 4, due: -3 * time.Hour, shard: 3, created: -4 * time.Hour, modified: -3 * time.Hour,
			errMsg: "truck API: 401 unauthorized", fbErr: "no manual queue", fallback: "callTruckByPhone", params: `["dock-1",1]`},
		{name: "labels.Print", state: runtime.StateRecovered, execTimes: 3, max: 3, due: -20 * time.Minute, shard: 0, created: -25 * time.Minute, modified: -20 * time.Minute,
			errMsg: "printer jammed", fallback: "printByHand", params: `{"label":"PKG-1"}`,
			attempts: []seedAttempt{fail("printer jammed", -25*time.Minute, 1000), fail("printer jammed", -24*time.Minute, 1000), fail("printer jammed", -23*time.Minute, 0),
				{kind: "fallback", outcome: runtime.OutcomeSucceeded, start: -20 * time.Minute, dur: 5 * time.Millisecond}}},
		{name: "labels.Print", state: runtime.StateDiscarded, execTimes: 1, max: 3, due: -2 * time.Hour, shard: 9, created: -2 * time.Hour, modified: -2 * time.Hour,
			errMsg: "printer offline", reason: "printer removed", params: `not json {`},
		{name: "labels.Print", state: runtime.StateRunning, execTimes: 1, max: 0, due: -1 * time.Second, shard: 9, created: -1 * time.Second, modified: -1 * time.Second,
			leaseOwner: "host-a-1234", leaseUntil: 29 * time.Second, params: `{"label":"PKG-2"}`},
	}
	for i, s := range tasks {
		var uk any = s.uniqueKey
		id := int64(i + 1)
		_, err := db.ExecContext(ctx, `INSERT INTO argo_task (id, task_id, task_status, execute_times, max_attempts, execute_time, parameter_types, method_name, method_sign_name, task_parameter, error_msg, alert_expression, fallback_class_name, fallback_error_msg, shard_key, retry_policy, lease_owner, lease_until, unique_key, discard_reason, gmt_create, gmt_modified) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, s.name, s.state, s.execTimes, s.max, ms(s.due), s.types, s.method, s.sig, s.params, s.errMsg, s.alert, s.fallback, s.fbErr, s.shard, policy, s.leaseOwner, leaseMs(s.leaseUntil), uk, s.reason, ms(s.created), ms(s.modified))
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range s.attempts {
			n := i + 1
			if a.kind == "fallback" {
				n = i
			}
			// Each row's move, as a finish records it (migration 000024).
			from, to := runtime.StateRunning, runtime.StateRetrying
			switch {
			case a.kind == "fallback":
				from, to = runtime.StateFallingBack, s.state
			case a.outcome == runtime.OutcomeSucceeded:
				to = runtime.StateSucceeded
			case a.backoffMs == 0:
				to = runtime.StateExhausted
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO argo_task_attempt (task_pk, attempt, kind, worker, started_at, finished_at, outcome, error_msg, backoff_ms, from_state, to_state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				id, n, a.kind, "host-a-1234", ms(a.start), ms(a.start+a.dur), a.outcome, a.err, a.backoffMs, from, to); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func leaseMs(d time.Duration) int64 {
	if d == 0 {
		return 0
	}
	return ms(d)
}

// golden compares got with testdata/name.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// TestGoldenTables checks the table output of the read commands; the same
// golden file serves both databases, so they must answer alike.
func TestGoldenTables(t *testing.T) {
	cases := []struct {
		golden string
		args   []string
	}{
		{"stats", []string{"stats"}},
		{"stats_window_10m", []string{"stats", "-window", "10m"}},
		{"list", []string{"list"}},
		{"list_dead_retrying", []string{"list", "-state", "dead,retrying"}},
		{"list_name_paged", []string{"list", "-name", "warehouse.LightOn", "-limit", "1", "-offset", "1"}},
		{"list_error_shard", []string{"list", "-error", "http 503", "-shard", "3"}},
		{"list_since", []string{"list", "-since", "15m"}},
		{"list_since_rfc3339", []string{"list", "-since", "2025-03-01T10:00:00Z", "-until", "2025-03-01T11:50:00Z"}},
		{"list_none", []string{"list", "-name", "nope"}},
		{"list_wide", []string{"list", "-wide"}},
		{"show_dead", []string{"show", "3"}},
		{"show_recovered", []string{"show", "6"}},
		{"show_running_raw_args", []string{"show", "8"}},
		{"show_discarded", []string{"show", "7"}},
	}
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			for _, c := range cases {
				t.Run(c.golden, func(t *testing.T) {
					golden(t, c.golden, mustCtl(t, b.DSN, c.args...))
				})
			}
		})
	}
}

func TestJSONOutput(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			var list struct {
				Total int `json:"total"`
				Tasks []struct {
					ID    int64  `json:"id"`
					State string `json:"state"`
					Due   string `json:"due"`
				} `json:"tasks"`
			}
			decode(t, mustCtl(t, b.DSN, "-o", "json", "list", "-state", "dead"), &list)
			if list.Total != 2 || len(list.Tasks) != 2 || list.Tasks[0].ID != 5 || list.Tasks[1].ID != 3 || list.Tasks[0].State != "dead" {
				t.Fatalf("list -state dead JSON = %+v", list)
			}
			if list.Tasks[1].Due != "2025-03-01T11:50:00.000Z" {
				t.Fatalf("due = %q", list.Tasks[1].Due)
			}

			var show struct {
				Arguments map[string]string `json:"arguments"`
				Attempts  []struct {
					Attempt int    `json:"attempt"`
					Outcome string `json:"outcome"`
				} `json:"attempts"`
				RetryPolicy map[string]any `json:"retry_policy"`
			}
			// global flags after the command work too
			decode(t, mustCtl(t, b.DSN, "show", "3", "-o", "json"), &show)
			if show.Arguments["slot"] != "C-11" || len(show.Attempts) != 5 || show.Attempts[4].Outcome != "failed" || show.RetryPolicy["backoff"] != "exponential" {
				t.Fatalf("show JSON = %+v", show)
			}

			var st struct {
				ByState   map[string]int            `json:"by_state"`
				ByTask    map[string]map[string]int `json:"by_task"`
				OldestDue struct {
					ID         int64   `json:"id"`
					LagSeconds float64 `json:"lag_seconds"`
				} `json:"oldest_due"`
				Attempts       int     `json:"attempts"`
				FailedAttempts int     `json:"failed_attempts"`
				RetryRate      float64 `json:"retry_rate"`
				Finished       int     `json:"finished"`
				Dead           int     `json:"dead"`
			}
			decode(t, mustCtl(t, b.DSN, "-o", "json", "stats"), &st)
			if st.ByState["dead"] != 2 || st.ByTask["labels.Print"]["running"] != 1 {
				t.Fatalf("stats JSON = %+v", st)
			}
			// Due tasks among pending/retrying: 2 (due -2m) and 4 (due -30s): 2 is oldest.
			if st.OldestDue.ID != 2 || st.OldestDue.LagSeconds != 120 {
				t.Fatalf("oldest due = %+v, want task 2 lagging 120s", st.OldestDue)
			}
			// In the last hour: attempts of tasks 1 (1 ok), 2 (2 failed), 3 (5 failed), 6 (3 failed; the fallback is not an attempt).
			if st.Attempts != 11 || st.FailedAttempts != 10 || st.Finished != 3 || st.Dead != 1 {
				t.Fatalf("stats window = %+v", st)
			}
		})
	}
}

func decode(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, s)
	}
}

func getTask(t *testing.T, dsn string, id int64) *runtime.Task {
	t.Helper()
	db, dialect := openDB(t, dsn)
	task, err := runtime.NewInspector(db, dialect).Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func TestRequeue(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			db, dialect := openDB(t, b.DSN)
			in := runtime.NewInspector(db, dialect)
			out := mustCtl(t, b.DSN, "requeue", "3")
			var newID int64
			if _, err := fmt.Sscanf(out, "requeued task 3 as task %d\n", &newID); err != nil || newID == 3 {
				t.Fatalf("requeue 3: %q", out)
			}
			task := getTask(t, b.DSN, newID)
			if task.State != runtime.StatePending || task.ExecuteTimes != 0 || !task.ExecuteTime.Time().Equal(fixedNow) || task.Name != getTask(t, b.DSN, 3).Name {
				t.Fatalf("new task after requeue: state %s, execute_times %d, due %v", task.State, task.ExecuteTimes, task.ExecuteTime.Time())
			}
			if old := getTask(t, b.DSN, 3); old.State != runtime.StateDead || old.ExecuteTimes != 5 {
				t.Fatalf("requeued task 3: %s after %d attempts, want it dead as it was", old.State, old.ExecuteTimes)
			}
			failCtl(t, b.DSN, 1, fmt.Sprintf("task 3 was requeued as task %d; act on that one", newID), "requeue", "3")
			failCtl(t, b.DSN, 1, fmt.Sprintf("task 3 was requeued as task %d; act on that one", newID), "requeue", "3", "--dry-run")
			failCtl(t, b.DSN, 1, "WF_STATE_TRANSITION_INVALID: task 2 cannot go from retrying to pending", "requeue", "2")
			failCtl(t, b.DSN, 1, "task 999 not found", "requeue", "999")
			// Several ids: each is reported; the first failure is the error line.
			out, errOut, code := ctl(t, b.DSN, "requeue", "1", "5", "--dry-run")
			if code != 1 || out != "would requeue task 5 (dry run: nothing changed)\n" ||
				errOut != "argoctl: 1 of 2 tasks not requeued; first: task 1 succeeded: finished tasks cannot be requeued; to run the call again, submit it again (call the wrapper with the same arguments)\n" {
				t.Fatalf("requeue 1 5 --dry-run: exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			failCtl(t, b.DSN, 2, "no task ids and no filter", "requeue")
			failCtl(t, b.DSN, 2, "ids or filters, not both", "requeue", "5", "-state", "dead")
			failCtl(t, b.DSN, 2, `"x" is not a task id`, "requeue", "x")

			// By filter: 5 (dead) and 7 (discarded) remain; the retrying and
			// running tasks of the same names never match.
			if out := mustCtl(t, b.DSN, "requeue", "-name", "labels.Print", "--dry-run"); out != "would requeue 1 task (dry run: nothing changed)\n" {
				t.Fatalf("dry run: %q", out)
			}
			if getTask(t, b.DSN, 7).State != runtime.StateDiscarded {
				t.Fatal("dry run changed a row")
			}
			if out := mustCtl(t, b.DSN, "requeue", "--all", "--dry-run"); out != "would requeue 2 tasks (dry run: nothing changed)\n" {
				t.Fatalf("--all dry run: %q", out)
			}
			if out := mustCtl(t, b.DSN, "-o", "json", "requeue", "-state", "dead,retrying"); !strings.Contains(out, `"tasks": 1`) {
				t.Fatalf("requeue -state dead,retrying: %q", out)
			}
			if _, err := in.Links(context.Background(), 5); err != nil {
				t.Fatal(err)
			}
			if l, _ := in.Links(context.Background(), 5); l.To == 0 || getTask(t, b.DSN, 2).State != runtime.StateRetrying {
				t.Fatal("filter requeue changed the wrong rows")
			}
			if out := mustCtl(t, b.DSN, "requeue", "--all"); out != "requeued 1 task\n" {
				t.Fatalf("requeue --all: %q", out)
			}
		})
	}
}

func TestDiscard(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			failCtl(t, b.DSN, 2, "discard needs -reason", "-single-operator-discard", "discard", "2")
			failCtl(t, b.DSN, 2, "discard needs -reason", "-single-operator-discard", "discard", "2", "-reason", "  ")
			failCtl(t, b.DSN, 2, "add --all", "-single-operator-discard", "discard", "-reason", "cleanup")
			failCtl(t, b.DSN, 1, "WF_STATE_TRANSITION_INVALID: task 8 cannot go from running to discarded", "-single-operator-discard", "discard", "8", "-reason", "stuck")
			failCtl(t, b.DSN, 1, "WF_STATE_TRANSITION_INVALID: task 1 cannot go from succeeded", "-single-operator-discard", "discard", "1", "-reason", "x")
			failCtl(t, b.DSN, 1, "task 42 not found", "-single-operator-discard", "discard", "42", "-reason", "x")

			if out := mustCtl(t, b.DSN, "-single-operator-discard", "discard", "2", "-reason", "slot removed from the wall"); out != "discarded task 2\n" {
				t.Fatalf("discard 2: %q", out)
			}
			if task := getTask(t, b.DSN, 2); task.State != runtime.StateDiscarded || task.DiscardReason != "slot removed from the wall" {
				t.Fatalf("after discard: %s %q", task.State, task.DiscardReason)
			}
			// warehouse.* discardable: 3 (dead), 4 (pending), 5 (dead).
			if out := mustCtl(t, b.DSN, "-single-operator-discard", "discard", "-error", "HTTP 503", "-reason", "peripheral replaced", "--dry-run"); out != "would discard 1 task (dry run: nothing changed)\n" {
				t.Fatalf("dry run: %q", out)
			}
			if out := mustCtl(t, b.DSN, "-single-operator-discard", "discard", "--all", "-reason", "migration"); out != "discarded 3 tasks\n" {
				t.Fatalf("discard --all: %q", out)
			}
			if task := getTask(t, b.DSN, 4); task.State != runtime.StateDiscarded || task.DiscardReason != "migration" {
				t.Fatalf("task 4 after discard --all: %s %q", task.State, task.DiscardReason)
			}
			if getTask(t, b.DSN, 8).State != runtime.StateRunning || getTask(t, b.DSN, 6).State != runtime.StateRecovered {
				t.Fatal("discard --all touched a running or finished task")
			}
		})
	}
}

func TestErrors(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			failCtl(t, b.DSN, 2, "list: flag provided but not defined: -bogus", "list", "-bogus")
			failCtl(t, b.DSN, 2, "flag provided but not defined: -x", "-x", "list")
			failCtl(t, b.DSN, 2, `unknown command "lsit"`, "lsit")
			failCtl(t, b.DSN, 2, `-o "yaml": want table or json`, "-o", "yaml", "list")
			failCtl(t, b.DSN, 2, `unknown task state "deadd"`, "list", "-state", "deadd")
			failCtl(t, b.DSN, 2, `-since "yesterday"`, "list", "-since", "yesterday")
			failCtl(t, b.DSN, 2, "-limit must be positive", "list", "-limit", "0")
			failCtl(t, b.DSN, 2, "show takes one task id", "show")
			failCtl(t, b.DSN, 1, "task 404 not found", "show", "404")
			failCtl(t, "", 2, "no database: set -dsn or ARGO_DSN", "stats")
		})
	}
	failCtl(t, "mysql:root@tcp(127.0.0.1:1)/argo", 1, "database unreachable (mysql:root@tcp(127.0.0.1:1)/argo): dial tcp 127.0.0.1:1", "stats")
	failCtl(t, "postgres://x", 1, `want "sqlite:PATH"`, "list")
	missing := filepath.Join(t.TempDir(), "nope.db")
	failCtl(t, "sqlite:"+missing, 1, "no such file or directory (create it with argoctl migrate)", "list")
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("list created the missing SQLite file")
	}
}

// TestMissingTable: a database without argo's tables names the file to apply.
func TestMissingTable(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			db, _ := openDB(t, b.DSN)
			if _, err := db.Exec("CREATE TABLE unrelated (x INT)"); err != nil { // the SQLite file exists
				t.Fatal(err)
			}
			for _, cmd := range [][]string{{"stats"}, {"list"}, {"show", "1"}, {"requeue", "1"}, {"discard", "1", "-reason", "x"}} {
				failCtl(t, b.DSN, 1, "the argo tables are missing or out of date", cmd...)
			}
			failCtl(t, b.DSN, 1, "argoctl migrate", "list")
		})
	}
}

func TestMigrateAndVersion(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			dialect := strings.SplitN(b.DSN, ":", 2)[0]
			files, err := fs.Glob(argosql.FS, dialect+"/*.up.sql") // every migration, in order
			if err != nil || len(files) < 3 {
				t.Fatalf("embedded migrations: %v, %v", files, err)
			}
			want := ""
			for _, f := range files {
				want += "applied sql/" + f + "\n"
			}
			if out := mustCtl(t, b.DSN, "migrate"); out != want {
				t.Fatalf("migrate: %q", out)
			}
			if out := mustCtl(t, b.DSN, "migrate"); out != "schema up to date ("+dialect+"): nothing to apply\n" {
				t.Fatalf("migrate again: %q", out)
			}
			if out := mustCtl(t, b.DSN, "-o", "json", "migrate"); !strings.Contains(out, `"applied": []`) {
				t.Fatalf("migrate json: %q", out)
			}
			if out := mustCtl(t, b.DSN, "list"); !strings.Contains(out, "no tasks of 0 matching") {
				t.Fatalf("list after migrate: %q", out)
			}
		})
	}
	if out := mustCtl(t, "", "version"); !strings.HasPrefix(out, "argoctl ") {
		t.Fatalf("version: %q", out)
	}
	if out := mustCtl(t, "", "help"); !strings.Contains(out, "usage: argoctl") {
		t.Fatalf("help: %q", out)
	}
	if _, errOut, code := ctl(t, ""); code != 2 || !strings.Contains(errOut, "usage: argoctl") {
		t.Fatalf("no command: exit %d, stderr %q", code, errOut)
	}
}

// TestMigrateAfterHandApply: files a DBA applied by hand (tables and columns
// there, no record) are reported "already present", not "applied"; the
// files after them are applied.
func TestMigrateAfterHandApply(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			dialect := strings.SplitN(b.DSN, ":", 2)[0]
			files, err := fs.Glob(argosql.FS, dialect+"/*.up.sql")
			if err != nil || len(files) < 3 {
				t.Fatalf("embedded migrations: %v, %v", files, err)
			}
			db, _ := openDB(t, b.DSN)
			byHand := files[:2] // 000001 and 000002, as a DBA applies them
			for _, f := range byHand {
				body, err := fs.ReadFile(argosql.FS, f)
				if err != nil {
					t.Fatal(err)
				}
				for _, stmt := range statements(string(body)) {
					if _, err := db.Exec(stmt); err != nil {
						t.Fatalf("%s by hand: %v", f, err)
					}
				}
			}
			want := ""
			for i, f := range files {
				// SQLite's 000004 changes nothing (it restates an index of
				// 000001): it is there as soon as 000001 is.
				if i < len(byHand) || f == "sqlite/000004_unique_key_bytes.up.sql" {
					want += "already present sql/" + f + ": its tables and columns were there; recorded\n"
				} else {
					want += "applied sql/" + f + "\n"
				}
			}
			if out := mustCtl(t, b.DSN, "migrate"); out != want {
				t.Fatalf("migrate after a hand-apply:\n%s\nwant:\n%s", out, want)
			}
			if out := mustCtl(t, b.DSN, "migrate"); out != "schema up to date ("+dialect+"): nothing to apply\n" {
				t.Fatalf("migrate again: %q", out)
			}

			// The JSON output lists the two apart.
			if _, err := db.Exec("DELETE FROM argo_schema_migrations WHERE version = 1"); err != nil {
				t.Fatal(err)
			}
			var got struct {
				Applied        []string `json:"applied"`
				AlreadyPresent []string `json:"already_present"`
			}
			out := mustCtl(t, b.DSN, "-o", "json", "migrate")
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("migrate json: %v\n%s", err, out)
			}
			if len(got.Applied) != 0 || len(got.AlreadyPresent) != 1 || got.AlreadyPresent[0] != files[0] {
				t.Fatalf("migrate json after deleting the record of %s: %s", files[0], out)
			}
		})
	}
}

// TestMigrateAfterPartialHandApply: a file of which only some tables were
// applied by hand is "applied", not "already present".
func TestMigrateAfterPartialHandApply(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			dialect := strings.SplitN(b.DSN, ":", 2)[0]
			first := dialect + "/000001_argo_task.up.sql"
			body, err := fs.ReadFile(argosql.FS, first)
			if err != nil {
				t.Fatal(err)
			}
			db, _ := openDB(t, b.DSN)
			stmts := statements(string(body))
			if len(stmts) < 2 || !strings.Contains(stmts[0], "argo_task (") {
				t.Fatalf("%s: want CREATE TABLE argo_task first, then more: %q", first, stmts)
			}
			if _, err := db.Exec(stmts[0]); err != nil { // argo_task only
				t.Fatal(err)
			}
			out := mustCtl(t, b.DSN, "migrate")
			if line, _, _ := strings.Cut(out, "\n"); line != "applied sql/"+first {
				t.Fatalf("migrate after creating argo_task only: first line %q, want applied; output:\n%s", line, out)
			}
		})
	}
}

// statements splits a migration file as a DBA's client does: on the
// semicolons that end a line (comment strings hold semicolons too).
func statements(body string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(body, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line + "\n")
		if strings.HasSuffix(t, ";") {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	return out
}
