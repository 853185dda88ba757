package storagetest

import (
	"errors"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// operatorNameCases: operator names are compared byte for byte, the same
// on every engine, and a name with leading or trailing white space is
// refused with a clear error.
func operatorNameCases() []testCase {
	return []testCase{
		{"NamesWithOuterSpacesRefused", operatorNamesOuterSpaces},
		{"NamesCompareByteForByte", operatorNamesByteForByte},
	}
}

// A name with white space before or after it is refused, by every action
// that records an operator, and changes nothing: here "alice " deciding
// alice's open request (SQLite took it as another operator and discarded
// the task; MariaDB's PAD SPACE collation took it as alice and said the
// request had been "decided meanwhile" while it was open).
func operatorNamesOuterSpaces(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	task := newTask("n", retrying, 100, 0)
	insert(t, s, task)
	before := get(t, s, task.ID)
	for _, who := range []string{"bob ", " bob", "bob\t", "\u00a0bob"} {
		if _, err := s.RequestDiscard(ctx, task.ID, "duplicate order", who, 200); !errors.Is(err, storage.ErrOperatorName) {
			t.Fatalf("a discard request by %q: %v, want ErrOperatorName", who, err)
		}
	}
	if _, err := s.RequestDiscard(ctx, task.ID, "duplicate order", "alice", 200); err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"alice ", " alice", "alice\n", "Alice "} {
		for _, approve := range []bool{true, false} {
			if err := s.DecideDiscard(ctx, task.ID, approve, "", who, 210, false); !errors.Is(err, storage.ErrOperatorName) {
				t.Fatalf("decision (approve %v) by %q: %v, want ErrOperatorName", approve, who, err)
			}
		}
		if err := s.ForceFail(ctx, task.ID, "stuck", who, 210); !errors.Is(err, storage.ErrOperatorName) {
			t.Fatalf("force-fail by %q: %v, want ErrOperatorName", who, err)
		}
		if err := s.RunNow(ctx, task.ID, "now", who, 210); !errors.Is(err, storage.ErrOperatorName) {
			t.Fatalf("run now by %q: %v, want ErrOperatorName", who, err)
		}
		if err := s.DiscardRecorded(ctx, task.ID, "gone", who, 210); !errors.Is(err, storage.ErrOperatorName) {
			t.Fatalf("discard by %q: %v, want ErrOperatorName", who, err)
		}
	}
	if row := get(t, s, task.ID); *row != *before {
		t.Fatalf("refused names changed the task: %+v, was %+v", row, before)
	}
	reqs, err := s.DiscardRequests(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 || reqs[0].Decision != "" || reqs[0].RequestedBy != "alice" {
		t.Fatalf("requests %+v, want alice's, still open", reqs)
	}
	// The request is open, and says so: its requester is refused as such.
	if err := s.DecideDiscard(ctx, task.ID, true, "", "alice", 220, false); !errors.Is(err, storage.ErrSameOperator) {
		t.Fatalf("approval by the requester: %v, want ErrSameOperator", err)
	}
}

// Names are compared byte for byte, not by the database's collation:
// "Alice" is another operator than "alice" on every engine (MariaDB's
// default collations would also take "Alice" for "alice"), and a request
// recorded with a trailing space (before names with outer spaces were
// refused) is decided by the name without it as another operator's — on
// MariaDB its PAD SPACE collation took them as one and refused with the
// false "decided meanwhile".
func operatorNamesByteForByte(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	a := newTask("n", retrying, 100, 0)
	b := newTask("n", retrying, 100, 0)
	insert(t, s, a)
	insert(t, s, b)
	if _, err := s.RequestDiscard(ctx, a.ID, "duplicate order", "alice", 200); err != nil {
		t.Fatal(err)
	}
	if err := s.DecideDiscard(ctx, a.ID, true, "", "Alice", 210, false); err != nil {
		t.Fatalf("approval by Alice of alice's request: %v, want it approved (another name)", err)
	}
	if got := get(t, s, a.ID).State; got != discarded {
		t.Fatalf("task %d is %s after the approval, want discarded", a.ID, got)
	}
	if _, err := s.RequestDiscard(ctx, b.ID, "duplicate order", "carol", 200); err != nil {
		t.Fatal(err)
	}
	exec(t, s, "UPDATE argo_discard_request SET requested_by = ? WHERE task_pk = ?", "carol ", b.ID)
	if err := s.DecideDiscard(ctx, b.ID, false, "keep it", "carol", 210, false); err != nil {
		t.Fatalf("rejection by carol of the request of %q: %v, want it rejected (another name)", "carol ", err)
	}
	reqs, err := s.DiscardRequests(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 || reqs[0].Decision != storage.DecisionRejected || reqs[0].DecidedBy != "carol" {
		t.Fatalf("requests %+v, want one rejected by carol", reqs)
	}
}
