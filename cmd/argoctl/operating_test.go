package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/runtime"
)

const examples = "github.com/argo-retry/argo/examples/"

// seedLongNames migrates the database and inserts dead tasks with full
// task names, with the ids given (written explicitly: never assume ids).
func seedLongNames(t *testing.T, dsn string, tasks map[int64]string, errMsg string) {
	t.Helper()
	db, dialect := openDB(t, dsn)
	ctx := context.Background()
	if _, err := runtime.Migrate(ctx, db, dialect); err != nil {
		t.Fatal(err)
	}
	for id, name := range tasks {
		if _, err := db.ExecContext(ctx, `INSERT INTO argo_task (id, task_id, task_status, execute_times, max_attempts, execute_time, parameter_types, method_name, method_sign_name, task_parameter, error_msg, alert_expression, fallback_class_name, fallback_error_msg, shard_key, retry_policy, lease_owner, lease_until, unique_key, discard_reason, gmt_create, gmt_modified) VALUES (?, ?, ?, 3, 3, ?, '', '', '', '{}', ?, '', '', '', 1234, '{}', '', 0, NULL, '', ?, ?)`,
			id, name, runtime.StateDead, ms(0), errMsg, ms(0), ms(0)); err != nil {
			t.Fatal(err)
		}
	}
}

// listIDs runs list -o json with args and returns the ids listed.
func listIDs(t *testing.T, dsn string, args ...string) []int64 {
	t.Helper()
	var out struct {
		Tasks []struct {
			ID int64 `json:"id"`
		} `json:"tasks"`
	}
	decode(t, mustCtl(t, dsn, append([]string{"-o", "json", "list"}, args...)...), &out)
	var ids []int64
	for _, task := range out.Tasks {
		ids = append(ids, task.ID)
	}
	slices.Sort(ids)
	return ids
}

// TestNameSuffix: -name matches a full name, or its end after a / or .;
// a full name that exists matches only itself; =NAME is exact only.
func TestNameSuffix(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seedLongNames(t, b.DSN, map[int64]string{
				101: examples + "warehouse/integration.Systems.PrintLabel",
				102: examples + "shop/integration.Systems.PrintLabel",
				103: examples + "warehouse/integration.Systems.Print",
				104: "Systems.PrintLabel",
			}, "printer offline")
			cases := []struct {
				name string
				want []int64
			}{
				{"PrintLabel", []int64{101, 102, 104}},
				{"integration.Systems.PrintLabel", []int64{101, 102}},
				{"warehouse/integration.Systems.PrintLabel", []int64{101}},
				{examples + "warehouse/integration.Systems.PrintLabel", []int64{101}},
				{"Systems.PrintLabel", []int64{104}}, // a full name: only itself
				{"Systems.Print", []int64{103}},
				{"Label", nil},             // not at a boundary
				{"ystems.PrintLabel", nil}, // not at a boundary
				{"=integration.Systems.PrintLabel", nil},
				{"=" + examples + "shop/integration.Systems.PrintLabel", []int64{102}},
			}
			for _, c := range cases {
				if got := listIDs(t, b.DSN, "-name", c.name); !slices.Equal(got, c.want) {
					t.Errorf("-name %s: ids %v, want %v", c.name, got, c.want)
				}
			}
			if out := mustCtl(t, b.DSN, "requeue", "-name", "PrintLabel", "--dry-run"); out != "would requeue 3 tasks (dry run: nothing changed)\n" {
				t.Errorf("requeue -name PrintLabel --dry-run: %q", out)
			}
			failCtl(t, b.DSN, 2, "-name =: want a task name after the =", "list", "-name", "=")
		})
	}
}

func TestMatchTaskName(t *testing.T) {
	names := []string{"a/b.C.D", "x/b.C.D", "b.C.D", "a/b.CC.D"}
	if got := runtime.MatchTaskName(names, "C.D"); !slices.Equal(got, []string{"a/b.C.D", "x/b.C.D", "b.C.D"}) {
		t.Errorf("C.D: %v", got)
	}
	if got := runtime.MatchTaskName(names, "b.C.D"); !slices.Equal(got, []string{"b.C.D"}) {
		t.Errorf("b.C.D (a full name): %v", got)
	}
	if got := runtime.MatchTaskName(names, ""); got != nil {
		t.Errorf("empty pattern: %v", got)
	}
}

// TestListFits120Columns: without -wide, list shows short names and cuts
// long errors so that every line fits 120 columns; -wide shows full names.
func TestListFits120Columns(t *testing.T) {
	long := "vehicle scheduler: dial tcp 10.0.0.7:443: connect: connection refused; retried through the backup route: also refused"
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seedLongNames(t, b.DSN, map[int64]string{
				2005: examples + "warehouse/integration.Systems.PrintLabel",
				2008: examples + "warehouse/integration.Systems.CallTruckToTheLoadingDock",
			}, long)
			out := mustCtl(t, b.DSN, "list")
			for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				if n := utf8.RuneCountInString(line); n > listWidth {
					t.Errorf("line of %d columns, want at most %d: %q", n, listWidth, line)
				}
			}
			if strings.Contains(out, examples) || !strings.Contains(out, " integration.Systems.PrintLabel ") {
				t.Errorf("list does not show short names:\n%s", out)
			}
			if !strings.Contains(out, "…\n") || strings.Contains(out, "also refused") {
				t.Errorf("list does not cut the long error:\n%s", out)
			}
			wide := mustCtl(t, b.DSN, "list", "-wide")
			if !strings.Contains(wide, examples+"warehouse/integration.Systems.CallTruckToTheLoadingDock") {
				t.Errorf("list -wide does not show full names:\n%s", wide)
			}
		})
	}
}

// TestRequeueRecorded: a requeue is recorded in the old task's operator
// trail (when, who, why, the new task), shown by argoctl show on both
// tasks; a refused requeue records nothing.
func TestRequeueRecorded(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			db, dialect := openDB(t, b.DSN)
			in := runtime.NewInspector(db, dialect)
			trail := func(id int64) []runtime.OperatorAction {
				t.Helper()
				tr, err := in.Trail(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				return tr
			}
			historyBefore, err := in.Attempts(context.Background(), 3)
			if err != nil {
				t.Fatal(err)
			}
			mustCtl(t, b.DSN, "requeue", "3", "-reason", "peripheral firmware fixed", "-operator", "alice")
			tr := trail(3)
			if len(tr) != 1 {
				t.Fatalf("task 3 trail: %+v, want one requeue", tr)
			}
			rec := tr[0]
			if rec.Action != runtime.ActionRequeue || rec.Reason != "peripheral firmware fixed" || rec.Operator != "alice" || !rec.At.Time().Equal(fixedNow) || !rec.OtherTask.Valid {
				t.Fatalf("requeue record: %+v", rec)
			}
			if h, _ := in.Attempts(context.Background(), 3); len(h) != len(historyBefore) {
				t.Fatalf("task 3 history: %d rows after requeue, want %d (as it was)", len(h), len(historyBefore))
			}
			newID := rec.OtherTask.Int64
			show := mustCtl(t, b.DSN, "show", "3")
			operator := "alice    " // SQLite has no accounts
			if rec.DBAccount != "" {
				operator = "alice (" + rec.DBAccount + ") " // MySQL: the account beside the name
			}
			if (b.Name == "mysql") != (rec.DBAccount != "") {
				t.Fatalf("requeue record on %s: account %q; want one on MySQL only", b.Name, rec.DBAccount)
			}
			for _, want := range []string{
				fmt.Sprintf("requeued as:      task %d", newID),
				"operator trail:",
				fmt.Sprintf("2025-03-01T12:00:00.000Z  requeue → task %d  %s peripheral firmware fixed", newID, operator),
			} {
				if !strings.Contains(show, want) {
					t.Fatalf("show 3 lacks %q:\n%s", want, show)
				}
			}
			if show := mustCtl(t, b.DSN, "show", fmt.Sprint(newID)); !strings.Contains(show, "requeued from:    task 3") {
				t.Fatalf("show %d:\n%s", newID, show)
			}
			var j struct {
				RequeuedTo int64 `json:"requeued_to"`
				Trail      []struct {
					Action, Operator string
				} `json:"operator_trail"`
			}
			decode(t, mustCtl(t, b.DSN, "-o", "json", "show", "3"), &j)
			if j.RequeuedTo != newID || len(j.Trail) != 1 || j.Trail[0].Operator != "alice" {
				t.Fatalf("show -o json 3: %+v", j)
			}

			// By filter, without a reason, as the OS user (none known to
			// the test but the account running it).
			mustCtl(t, b.DSN, "requeue", "-name", "CallTruck")
			if tr := trail(5); len(tr) != 1 || tr[0].Action != runtime.ActionRequeue || tr[0].Reason != "" || tr[0].Operator == "" {
				t.Fatalf("task 5 trail after requeue by filter: %+v", tr)
			}

			// Refused requeues record nothing.
			failCtl(t, b.DSN, 1, "cannot go from retrying to pending", "requeue", "2", "-reason", "x")
			if tr := trail(2); len(tr) != 0 {
				t.Fatalf("refused requeue of task 2 recorded: %+v", tr)
			}
			failCtl(t, b.DSN, 1, "requeue reason contains a NUL byte", "requeue", "7", "-reason", "a\x00b")
			if l, _ := in.Links(context.Background(), 7); l.To != 0 {
				t.Fatal("task 7 requeued with a refused reason")
			}
		})
	}
}

// TestRequeueFinished: requeueing a succeeded or recovered task says
// plainly that finished tasks cannot be requeued, and what to do instead.
func TestRequeueFinished(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			const want = "finished tasks cannot be requeued; to run the call again, submit it again"
			failCtl(t, b.DSN, 1, "task 1 succeeded: "+want, "requeue", "1")
			failCtl(t, b.DSN, 1, "task 6 recovered: "+want, "requeue", "6", "-reason", "again")
			failCtl(t, b.DSN, 1, "task 6 recovered: "+want, "requeue", "6", "--dry-run")
			if getTask(t, b.DSN, 1).State != runtime.StateSucceeded || getTask(t, b.DSN, 6).State != runtime.StateRecovered {
				t.Fatal("a finished task changed")
			}
		})
	}
}
