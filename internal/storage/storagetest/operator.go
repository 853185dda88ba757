package storagetest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// operatorCases: reviewed discards, force-fail, run now, and the operator
// trail they write (migration 000005).
func operatorCases() []testCase {
	return []testCase{
		{"DiscardApprovedBySecondOperator", operatorDiscardApproved},
		{"DiscardRejected", operatorDiscardRejected},
		{"DiscardApprovalFromTheRequestersAccount", operatorDiscardSameAccount},
		{"ApprovalOfATaskThatRanMeanwhile", operatorApprovalRaced},
		{"DiscardRecordedAndNotOfRequeued", operatorDiscardRecorded},
		{"ForceFail", operatorForceFail},
		{"RunNow", operatorRunNow},
	}
}

// actions lists the actions of a trail.
func actions(tr []storage.OperatorAction) []string {
	var out []string
	for _, a := range tr {
		out = append(out, a.Action+" by "+a.Operator)
	}
	return out
}

// A discard request leaves its task untouched; a second request is
// refused while it is open; its own requester cannot approve it; another
// operator's approval discards the task with the request's reason, in the
// same transaction, and closes the request. The trail has each step.
func operatorDiscardApproved(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	task := newTask("d", retrying, 100, 0)
	insert(t, s, task)
	before := get(t, s, task.ID)
	if _, err := s.RequestDiscard(ctx, task.ID, "", "alice", 200); err == nil {
		t.Fatal("a discard request without a reason was accepted")
	}
	if _, err := s.RequestDiscard(ctx, task.ID, "duplicate order", "", 200); !errors.Is(err, storage.ErrNoOperator) {
		t.Fatalf("a discard request without an operator: %v, want ErrNoOperator", err)
	}
	reqID, err := s.RequestDiscard(ctx, task.ID, "duplicate order", "alice", 200)
	if err != nil || reqID == 0 {
		t.Fatalf("request: %d, %v", reqID, err)
	}
	if row := get(t, s, task.ID); *row != *before {
		t.Fatalf("a discard request changed the task: %+v", row)
	}
	if _, err := s.RequestDiscard(ctx, task.ID, "again", "bob", 210); !errors.Is(err, storage.ErrDiscardRequestOpen) {
		t.Fatalf("second request while one is open: %v, want ErrDiscardRequestOpen", err)
	}
	if err := s.DecideDiscard(ctx, task.ID, true, "", "alice", 220, false); !errors.Is(err, storage.ErrSameOperator) {
		t.Fatalf("approval by the requester: %v, want ErrSameOperator", err)
	}
	if row := get(t, s, task.ID); *row != *before {
		t.Fatalf("a refused approval changed the task: %+v", row)
	}
	if err := s.DecideDiscard(ctx, task.ID, true, "checked the order", "bob", 230, false); err != nil {
		t.Fatal(err)
	}
	row := get(t, s, task.ID)
	if row.State != discarded || row.DiscardReason != "duplicate order" || row.GmtModified != 230 {
		t.Fatalf("approved discard: %s %q at %d", row.State, row.DiscardReason, row.GmtModified)
	}
	reqs, err := s.DiscardRequests(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := storage.DiscardRequest{ID: reqID, TaskPK: task.ID, RequestedBy: "alice", Reason: "duplicate order", RequestedAt: 200,
		Decision: storage.DecisionApproved, DecidedBy: "bob", DecidedAt: 230, DecisionReason: "checked the order", RequestedAccount: dbAccount(t, s)}
	if len(reqs) != 1 || reqs[0] != want {
		t.Fatalf("requests %+v, want %+v", reqs, want)
	}
	if err := s.DecideDiscard(ctx, task.ID, true, "", "carol", 240, false); !errors.Is(err, storage.ErrNoDiscardRequest) {
		t.Fatalf("approval of a decided request: %v, want ErrNoDiscardRequest", err)
	}
	if got := actions(trail(t, s, task.ID)); !slices.Equal(got, []string{"discard_request by alice", "discard_approve by bob"}) {
		t.Fatalf("trail %q", got)
	}
}

// A rejection leaves the task as it was and closes the request, so that a
// new one can be made.
func operatorDiscardRejected(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	task := newTask("d", dead, 100, 0)
	insert(t, s, task)
	before := get(t, s, task.ID)
	if _, err := s.RequestDiscard(ctx, task.ID, "customer cancelled", "alice", 200); err != nil {
		t.Fatal(err)
	}
	if err := s.DecideDiscard(ctx, task.ID, false, "", "alice", 205, false); !errors.Is(err, storage.ErrSameOperator) {
		t.Fatalf("rejection by the requester: %v, want ErrSameOperator", err)
	}
	if err := s.DecideDiscard(ctx, task.ID, false, "they did not", "bob", 210, false); err != nil {
		t.Fatal(err)
	}
	if row := get(t, s, task.ID); *row != *before {
		t.Fatalf("a rejected discard changed the task: %+v", row)
	}
	reqs, err := s.DiscardRequests(ctx, task.ID)
	if err != nil || len(reqs) != 1 || reqs[0].Decision != storage.DecisionRejected || reqs[0].DecidedBy != "bob" {
		t.Fatalf("requests %+v, %v", reqs, err)
	}
	if _, err := s.RequestDiscard(ctx, task.ID, "now they did", "carol", 300); err != nil {
		t.Fatalf("a new request after a rejection: %v", err)
	}
	if got := actions(trail(t, s, task.ID)); !slices.Equal(got, []string{"discard_request by alice", "discard_reject by bob", "discard_request by carol"}) {
		t.Fatalf("trail %q", got)
	}
}

// An approval of a task that started running since the request is refused
// with nothing changed, the request left open; it can then be rejected.
// A request for a task no one may discard is refused.
func operatorApprovalRaced(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	task := newTask("d", pending, 100, 0)
	done := newTask("d", succeeded, 100, 0)
	insert(t, s, task, done)
	if _, err := s.RequestDiscard(ctx, task.ID, "not needed", "alice", 200); err != nil {
		t.Fatal(err)
	}
	claimByID(t, s, task.ID, "w1", 300, 9000)
	wantTransitionInvalid(t, "approval of a running task", s.DecideDiscard(ctx, task.ID, true, "", "bob", 310, false))
	if row := get(t, s, task.ID); row.State != running || row.LeaseOwner != "w1" {
		t.Fatalf("a refused approval changed the running task: %s %q", row.State, row.LeaseOwner)
	}
	if got := actions(trail(t, s, task.ID)); !slices.Equal(got, []string{"discard_request by alice"}) {
		t.Fatalf("trail after a refused approval %q", got)
	}
	if err := s.DecideDiscard(ctx, task.ID, false, "it ran", "bob", 320, false); err != nil {
		t.Fatalf("rejection of the request left open: %v", err)
	}
	_, err := s.RequestDiscard(ctx, done.ID, "x", "alice", 200)
	wantTransitionInvalid(t, "discard request of a succeeded task", err)
	if n := count(t, s, "SELECT COUNT(*) FROM argo_discard_request WHERE task_pk = ?", done.ID); n != 0 {
		t.Fatalf("a refused request was stored")
	}
}

// A discard without review records who, when and why; a requeued task
// cannot be discarded (its new task is the one to act on), by either path.
func operatorDiscardRecorded(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	task, old := newTask("d", exhausted, 100, 0), newTask("d", dead, 100, 0)
	insert(t, s, task, old)
	if err := s.DiscardRecorded(ctx, task.ID, "obsolete", "alice", 200); err != nil {
		t.Fatal(err)
	}
	tr := trail(t, s, task.ID)
	if len(tr) != 1 || tr[0].Action != storage.ActionDiscard || tr[0].Operator != "alice" || tr[0].Reason != "obsolete" || tr[0].At != 200 {
		t.Fatalf("trail %+v", tr)
	}
	if _, err := s.RequeueAsNew(ctx, old.ID, "", "ops", 200); err != nil {
		t.Fatal(err)
	}
	before := get(t, s, old.ID)
	if err := s.DiscardRecorded(ctx, old.ID, "x", "alice", 300); !errors.Is(err, storage.ErrAlreadyRequeued) {
		t.Fatalf("discard of a requeued task: %v, want ErrAlreadyRequeued", err)
	}
	if _, err := s.RequestDiscard(ctx, old.ID, "x", "alice", 300); !errors.Is(err, storage.ErrAlreadyRequeued) {
		t.Fatalf("discard request of a requeued task: %v, want ErrAlreadyRequeued", err)
	}
	if after := get(t, s, old.ID); *after != *before {
		t.Fatalf("a refused discard changed the requeued row: %+v", after)
	}
}

// A force-fail sends a task no worker holds (pending, blocked, retrying,
// exhausted; a held retry or held scheduled call included) to the dead
// letter, unleased, and records it (seed 001's force_fail, from any state
// not leased nor final). A running or falling_back task (its worker holds
// the lease) and final states are refused, untouched.
func operatorForceFail(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	plain := newTask("f", retrying, 5000, 0)
	held := leasedTask("f", retrying, 5000, 0, "inst-1", 2, 5000)
	waiting := newTask("f", pending, 5000, 0)
	heldScheduled := leasedTask("f", pending, 5000, 0, "inst-1", 0, 5000)
	blocked := newTask("f", storage.StateBlocked, 5000, 0)
	spent := newTask("f", exhausted, 5000, 0)
	spent.ExecuteTimes = 3
	insert(t, s, plain, held, waiting, heldScheduled, blocked, spent)
	var others []*storage.Task
	for _, st := range []storage.State{dead, succeeded, recovered, discarded, storage.StateSkipped} {
		others = append(others, newTask("f", st, 100, 0))
	}
	others = append(others, leasedTask("f", running, 100, 0, "w", 1, 9000), leasedTask("f", fallingBack, 100, 0, "w", 3, 9000))
	insert(t, s, others...)
	if err := s.ForceFail(ctx, plain.ID, "", "alice", 200); err == nil {
		t.Fatal("a force-fail without a reason was accepted")
	}
	for _, task := range []*storage.Task{plain, held, waiting, heldScheduled, blocked, spent} {
		if err := s.ForceFail(ctx, task.ID, "endpoint retired", "alice", 200); err != nil {
			t.Fatalf("force-fail of a %s task: %v", task.State, err)
		}
		row := get(t, s, task.ID)
		if row.State != dead || row.LeaseOwner != "" || row.LeaseUntil != 0 || row.GmtModified != 200 || row.ExecuteTimes != task.ExecuteTimes {
			t.Fatalf("force-failed %s row: %s owner %q until %d", task.State, row.State, row.LeaseOwner, row.LeaseUntil)
		}
		if got := actions(trail(t, s, task.ID)); !slices.Equal(got, []string{"force_fail by alice"}) {
			t.Fatalf("trail %q", got)
		}
	}
	for _, task := range others {
		wantTransitionInvalid(t, "force-fail of a "+task.State.String()+" task", s.ForceFail(ctx, task.ID, "x", "alice", 200))
		if row := get(t, s, task.ID); *row != *task {
			t.Fatalf("a refused force-fail changed the %s row", task.State)
		}
	}
}

// Run now makes a pending or retrying task due now, a held retry given back
// to the claim; it is then claimed at now. Other states are refused.
func operatorRunNow(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	later := newTask("n", pending, 90_000, 0)
	held := leasedTask("n", retrying, 90_000, 0, "inst-1", 2, 90_000)
	insert(t, s, later, held)
	var others []*storage.Task
	for _, st := range []storage.State{exhausted, dead, succeeded} {
		others = append(others, newTask("n", st, 90_000, 0))
	}
	others = append(others, leasedTask("n", running, 100, 0, "w", 1, 9000))
	insert(t, s, others...)
	for _, task := range []*storage.Task{later, held} {
		if err := s.RunNow(ctx, task.ID, "", "bob", 200); err != nil {
			t.Fatal(err)
		}
		row := get(t, s, task.ID)
		if row.State != task.State || row.ExecuteTime != 200 || row.LeaseOwner != "" || row.LeaseUntil != 0 {
			t.Fatalf("run-now row: %s due %d owner %q", row.State, row.ExecuteTime, row.LeaseOwner)
		}
	}
	claimed, err := s.ClaimDue(ctx, "w2", 200, 5000, 10, []string{"n"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := idsOf(claimed); len(got) != 2 || !slices.Contains(got, later.ID) || !slices.Contains(got, held.ID) {
		t.Fatalf("claimed %v at now, want %d and %d", got, later.ID, held.ID)
	}
	for _, task := range others {
		wantTransitionInvalid(t, "run-now of a "+task.State.String()+" task", s.RunNow(ctx, task.ID, "", "bob", 200))
		if row := get(t, s, task.ID); *row != *task {
			t.Fatalf("a refused run-now changed the %s row", task.State)
		}
	}
	if got := actions(trail(t, s, later.ID)); !slices.Equal(got, []string{"run_now by bob"}) {
		t.Fatalf("trail %q", got)
	}
}

// An approval from the database account that made the request is refused
// where accounts must differ (ErrSameAccount, nothing changes), on an
// engine with accounts (MySQL's CURRENT_USER()); a rejection from it, or
// an approval where accounts may be shared (the console), goes through.
// SQLite has no accounts: the approval goes through.
func operatorDiscardSameAccount(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	a, b := newTask("d", dead, 100, 0), newTask("d", dead, 100, 0)
	insert(t, s, a)
	insert(t, s, b)
	account := dbAccount(t, s)
	for _, task := range []*storage.Task{a, b} {
		if _, err := s.RequestDiscard(ctx, task.ID, "duplicate order", "alice", 200); err != nil {
			t.Fatal(err)
		}
	}
	err := s.DecideDiscard(ctx, a.ID, true, "", "bob", 210, true)
	if account == "" {
		if err != nil {
			t.Fatalf("approval on an engine without accounts: %v", err)
		}
		return
	}
	if !errors.Is(err, storage.ErrSameAccount) || !strings.Contains(err.Error(), account) {
		t.Fatalf("approval from the requester's account %s: %v, want ErrSameAccount naming it", account, err)
	}
	if row := get(t, s, a.ID); row.State != dead {
		t.Fatalf("a refused approval changed the task: %s", row.State)
	}
	if err := s.DecideDiscard(ctx, a.ID, false, "not mine to approve", "bob", 220, true); err != nil {
		t.Fatalf("rejection from the requester's account: %v, want it to stand", err)
	}
	if err := s.DecideDiscard(ctx, b.ID, true, "", "bob", 230, false); err != nil {
		t.Fatalf("approval where accounts may be shared: %v", err)
	}
	if row := get(t, s, b.ID); row.State != discarded {
		t.Fatalf("approved discard left the task %s", row.State)
	}
	for _, r := range trail(t, s, b.ID) {
		if r.DBAccount != account {
			t.Fatalf("trail record %+v: account %q, want %q", r, r.DBAccount, account)
		}
	}
}

// dbAccount is the database account s's connections run as (MySQL's
// CURRENT_USER()), "" on SQLite, which has none.
func dbAccount(t *testing.T, s *storage.Store) string {
	t.Helper()
	if s.Dialect() == "sqlite" {
		return ""
	}
	var account string
	if err := s.DB().QueryRowContext(ctxFor(t), "SELECT CURRENT_USER()").Scan(&account); err != nil {
		t.Fatal(err)
	}
	return account
}
