package main

import (
	"context"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/runtime"
)

// TestReviewedDiscard: a discard needs two people by default (seed 001):
// discard is refused, also with ARGO_SINGLE_OPERATOR_DISCARD overridden
// by -discard-approval; discard-request leaves the task untouched; its
// requester cannot approve it; on MySQL another operator's approval from
// the requester's database account is refused too (a name is what the
// tool says, the account what the server authenticated); an approval by
// another operator from another account discards the task with the
// request's reason; show lists the open request and the trail, with the
// accounts; a rejection leaves the task as it was.
func TestReviewedDiscard(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			failCtl(t, b.DSN, 1, "needs a second operator's approval", "discard", "4", "-reason", "x")
			out, errOut, code := ctlEnv(t, b.DSN, map[string]string{"ARGO_SINGLE_OPERATOR_DISCARD": "1"}, "-discard-approval", "discard", "4", "-reason", "x")
			if code != 1 || out != "" || !strings.Contains(errOut, "needs a second operator's approval") {
				t.Fatalf("discard with ARGO_SINGLE_OPERATOR_DISCARD=1 -discard-approval: exit %d, %q, %q", code, out, errOut)
			}
			if getTask(t, b.DSN, 4).State != runtime.StatePending {
				t.Fatal("a refused discard changed task 4")
			}
			// Each operator connects as their own account (MySQL).
			aliceDSN, bobDSN := b.DSN, b.DSN
			if b.Name == "mysql" {
				aliceDSN = testdb.MySQLUser(t, b.DSN, "SELECT, INSERT, UPDATE, DELETE")
				bobDSN = testdb.MySQLUser(t, b.DSN, "SELECT, INSERT, UPDATE, DELETE")
			}
			failCtl(t, aliceDSN, 2, "discard-request needs -reason", "discard-request", "4", "-operator", "alice")
			if out := mustCtl(t, aliceDSN, "discard-request", "4", "-reason", "order cancelled", "-operator", "alice"); !strings.HasPrefix(out, "discard requested for task 4 (request ") {
				t.Fatalf("discard-request: %q", out)
			}
			if getTask(t, b.DSN, 4).State != runtime.StatePending {
				t.Fatal("a discard request changed task 4")
			}
			show := mustCtl(t, b.DSN, "show", "4")
			if !strings.Contains(show, "discard requested:") || !strings.Contains(show, "by alice") || !strings.Contains(show, ": order cancelled (awaits another operator") {
				t.Fatalf("show 4 lacks the open request:\n%s", show)
			}
			failCtl(t, bobDSN, 1, "another operator than the one who made it", "discard-approve", "4", "-operator", "alice")
			if b.Name == "mysql" {
				failCtl(t, aliceDSN, 1, "approved from another database account", "discard-approve", "4", "-operator", "bob")
			}
			if getTask(t, b.DSN, 4).State != runtime.StatePending {
				t.Fatal("an approval by the requester changed task 4")
			}
			if out := mustCtl(t, bobDSN, "discard-approve", "4", "-operator", "bob", "-reason", "checked"); out != "discard approved: discarded task 4\n" {
				t.Fatalf("discard-approve: %q", out)
			}
			if task := getTask(t, b.DSN, 4); task.State != runtime.StateDiscarded || task.DiscardReason != "order cancelled" {
				t.Fatalf("task 4 after approval: %s %q", task.State, task.DiscardReason)
			}
			show = mustCtl(t, b.DSN, "show", "4")
			for _, want := range []string{"operator trail:", "discard_request  alice", "order cancelled", "discard_approve  bob", "checked"} {
				if !strings.Contains(show, want) {
					t.Fatalf("show 4 lacks %q:\n%s", want, show)
				}
			}
			if b.Name == "mysql" {
				alice, bob := accountOf(t, aliceDSN), accountOf(t, bobDSN)
				for _, want := range []string{"alice (" + alice + ")", "bob (" + bob + ")"} {
					if !strings.Contains(show, want) {
						t.Fatalf("show 4 lacks the account %q:\n%s", want, show)
					}
				}
			}

			mustCtl(t, b.DSN, "discard-request", "5", "-reason", "duplicate", "-operator", "alice")
			failCtl(t, b.DSN, 1, "awaits a decision already", "discard-request", "5", "-reason", "again", "-operator", "carol")
			mustCtl(t, b.DSN, "discard-reject", "5", "-operator", "bob", "-reason", "not a duplicate") // a rejection from the same account stands
			if getTask(t, b.DSN, 5).State != runtime.StateDead {
				t.Fatal("a rejected discard changed task 5")
			}
			failCtl(t, b.DSN, 1, "no discard request awaits a decision", "discard-approve", "5", "-operator", "bob")
		})
	}
}

// accountOf is the account a "mysql:" DSN's connections run as, as
// CURRENT_USER() names it.
func accountOf(t *testing.T, dsn string) string {
	t.Helper()
	db, _, err := runtime.OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var account string
	if err := db.QueryRowContext(context.Background(), "SELECT CURRENT_USER()").Scan(&account); err != nil {
		t.Fatal(err)
	}
	return account
}

// TestForceFailAndRun: force-fail sends a retrying task to the dead letter
// (reason required) and refuses a running one (its worker holds the lease)
// and final ones; run makes a waiting task due
// now and refuses a running one; both are in the trail.
func TestForceFailAndRun(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			failCtl(t, b.DSN, 2, "force-fail needs -reason", "force-fail", "2")
			failCtl(t, b.DSN, 1, "WF_STATE_TRANSITION_INVALID: task 8 cannot go from running to dead", "force-fail", "8", "-reason", "x")
			failCtl(t, b.DSN, 1, "WF_STATE_TRANSITION_INVALID: task 6 cannot go from recovered to dead", "force-fail", "6", "-reason", "x")
			if out := mustCtl(t, b.DSN, "force-fail", "2", "-reason", "endpoint retired", "-operator", "alice"); out != "sent to the dead letter: task 2\n" {
				t.Fatalf("force-fail 2: %q", out)
			}
			if getTask(t, b.DSN, 2).State != runtime.StateDead {
				t.Fatal("task 2 not dead after force-fail")
			}
			failCtl(t, b.DSN, 1, "WF_STATE_TRANSITION_INVALID: task 8 cannot go from running to running", "run", "8")
			if out := mustCtl(t, b.DSN, "run", "4", "-operator", "bob"); out != "due now: task 4\n" {
				t.Fatalf("run 4: %q", out)
			}
			if task := getTask(t, b.DSN, 4); !task.ExecuteTime.Time().Equal(fixedNow) || task.State != runtime.StatePending {
				t.Fatalf("task 4 after run: %s due %v, want pending due %v", task.State, task.ExecuteTime.Time(), fixedNow)
			}
			db, dialect := openDB(t, b.DSN)
			in := runtime.NewInspector(db, dialect)
			for id, want := range map[int64]string{2: runtime.ActionForceFail + " alice", 4: runtime.ActionRunNow + " bob"} {
				tr, err := in.Trail(context.Background(), id)
				if err != nil || len(tr) != 1 || tr[0].Action+" "+tr[0].Operator != want {
					t.Fatalf("trail of %d: %+v, %v; want %s", id, tr, err, want)
				}
			}
		})
	}
}

// ctlEnv is ctl with more environment variables.
func ctlEnv(t *testing.T, dsn string, vars map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb strings.Builder
	getenv := func(k string) string {
		if k == "ARGO_DSN" {
			return dsn
		}
		return vars[k]
	}
	code = run(context.Background(), args, &out, &errb, getenv)
	return out.String(), errb.String(), code
}
