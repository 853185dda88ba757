package storagetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// errorCodeCases: the error code of a failed attempt (runtime.Coded,
// migration 000021, docs/errors.md) on its history row and on its task,
// the filter by code, and the count of refused operator transitions.
func errorCodeCases() []testCase {
	return []testCase{
		{"FinishStoresCode", errorCodeFinishStores},
		{"BatchStoresCodes", errorCodeBatchStores},
		{"BadCodeNotStored", errorCodeBadNotStored},
		{"Filter", errorCodeFilter},
		{"RefusedTransitionsCounted", errorCodeRefusedCounted},
	}
}

// coded is failure with the attempt's code.
func coded(c *storage.Task, to storage.State, due storage.Millis, text, code string) storage.Finishing {
	f := failure(c, to, due, text)
	f.History.ErrorCode = code
	return f
}

// A failed attempt's code is on its history row and on the task; a later
// failed attempt without one clears the task's (it is the last failed
// attempt's); a success leaves the task's code as it was (the code of the
// last failed attempt) and writes none.
func errorCodeFinishStores(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	task := newTask("code", pending, 4, 0)
	insert(t, s, task)
	c := claimByID(t, s, task.ID, "w", 10, 100)
	if err := s.Finish(ctx, coded(c, retrying, 20, "timeout", "PAY_TIMEOUT"), 20); err != nil {
		t.Fatal(err)
	}
	if row := get(t, s, task.ID); row.ErrorCode != "PAY_TIMEOUT" {
		t.Fatalf("task code after attempt 1: %q, want PAY_TIMEOUT", row.ErrorCode)
	}
	claim := func(now storage.Millis) *storage.Task {
		c, err := s.ClaimByID(ctx, task.ID, task.ShardKey, retrying, "w", now, now+100)
		if err != nil || c == nil {
			t.Fatalf("claim again: %v, %v", c, err)
		}
		return c
	}
	if err := s.Finish(ctx, failure(claim(30), retrying, 40, "no code"), 40); err != nil {
		t.Fatal(err)
	}
	if row := get(t, s, task.ID); row.ErrorCode != "" {
		t.Fatalf("task code after attempt 2 (no code): %q, want none", row.ErrorCode)
	}
	if err := s.Finish(ctx, coded(claim(50), retrying, 60, "declined", "card:declined.51"), 60); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, success(claim(70)), 80); err != nil {
		t.Fatal(err)
	}
	row := get(t, s, task.ID)
	if row.State != succeeded || row.ErrorCode != "card:declined.51" {
		t.Fatalf("after the success: %s code %q, want succeeded with the last failed attempt's code", row.State, row.ErrorCode)
	}
	var got []string
	for _, a := range attempts(t, s, task.ID) {
		got = append(got, a.Outcome+"/"+a.ErrorCode)
	}
	want := []string{"failed/PAY_TIMEOUT", "failed/", "failed/card:declined.51", "succeeded/"}
	if !slices.Equal(got, want) {
		t.Fatalf("history outcomes/codes %q, want %q", got, want)
	}
}

// The batched finish (one multi-row INSERT; on MySQL one round trip)
// stores each attempt's own code.
func errorCodeBatchStores(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	a, b := newTask("code-b", pending, 3, 0), newTask("code-b", pending, 3, 0)
	insert(t, s, a, b)
	fs := []storage.Finishing{
		coded(claimByID(t, s, a.ID, "w", 10, 100), retrying, 20, "a", "A_1"),
		coded(claimByID(t, s, b.ID, "w", 10, 100), exhausted, 20, "b", "B-2"),
	}
	errs, err := s.FinishBatch(ctx, fs, 20)
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("batch: %v %v", errs, err)
	}
	for id, code := range map[int64]string{a.ID: "A_1", b.ID: "B-2"} {
		atts := attempts(t, s, id)
		if row := get(t, s, id); row.ErrorCode != code || len(atts) != 1 || atts[0].ErrorCode != code {
			t.Fatalf("task %d: row code %q, history %+v; want %q on both", id, row.ErrorCode, atts, code)
		}
	}
}

// A code the runtime would refuse (too long, not ASCII, not UTF-8, NUL,
// space) that reaches the store anyway is not stored, and the finish is
// not refused (on MySQL in strict mode, a VARCHAR(64) ASCII column would
// refuse it and cost the attempt's outcome): the row and its history keep
// the outcome and the error text, with no code.
func errorCodeBadNotStored(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	for _, code := range []string{strings.Repeat("C", storage.MaxErrorCode+1), "Zahlung_fehlgeschlagen_ä", "BAD\xff", "A\x00B", "TWO WORDS"} {
		task := newTask("code-bad", pending, 3, 0)
		insert(t, s, task)
		if err := s.Finish(ctx, coded(claimByID(t, s, task.ID, "w", 10, 100), retrying, 20, "boom", code), 20); err != nil {
			t.Fatalf("code %q: finish refused: %v", code, err)
		}
		row, atts := get(t, s, task.ID), attempts(t, s, task.ID)
		if row.State != retrying || row.ErrorMsg != "boom" || row.ErrorCode != "" || len(atts) != 1 || atts[0].ErrorCode != "" || atts[0].Error != "boom" {
			t.Fatalf("code %q: row %s %q code %q, history %+v; want retrying, boom, no code", code, row.State, row.ErrorMsg, row.ErrorCode, atts)
		}
	}
	// The longest valid code is stored whole.
	task := newTask("code-bad", pending, 3, 0)
	insert(t, s, task)
	max := strings.Repeat("Z", storage.MaxErrorCode)
	if err := s.Finish(ctx, coded(claimByID(t, s, task.ID, "w", 10, 100), retrying, 20, "boom", max), 20); err != nil {
		t.Fatal(err)
	}
	if row := get(t, s, task.ID); row.ErrorCode != max {
		t.Fatalf("a %d-byte code stored as %q", storage.MaxErrorCode, row.ErrorCode)
	}
}

// Filter.ErrorCode selects the tasks whose last failed attempt had the
// code, byte for byte (case matters, on both engines), with the other
// criteria.
func errorCodeFilter(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	var want []int64
	for i, code := range []string{"PAY_TIMEOUT", "pay_timeout", "PAY_TIMEOUT", "", "PAY_TIMEOUT_2"} {
		task := newTask("code-f", pending, 3, 0)
		insert(t, s, task)
		to := retrying
		if i == 2 {
			to = exhausted
		}
		if err := s.Finish(ctx, coded(claimByID(t, s, task.ID, "w", 10, 100), to, 20, "boom", code), 20); err != nil {
			t.Fatal(err)
		}
		if code == "PAY_TIMEOUT" {
			want = append([]int64{task.ID}, want...) // newest first
		}
	}
	ids := func(f storage.Filter) []int64 {
		got, err := s.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, task := range got {
			out = append(out, task.ID)
		}
		return out
	}
	if got := ids(storage.Filter{ErrorCode: "PAY_TIMEOUT"}); !slices.Equal(got, want) {
		t.Fatalf("code PAY_TIMEOUT: %v, want %v", got, want)
	}
	if got := ids(storage.Filter{ErrorCode: "PAY_TIMEOUT", States: []storage.State{exhausted}}); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("code PAY_TIMEOUT and exhausted: %v, want [%d]", got, want[0])
	}
	if n, err := s.Count(ctx, storage.Filter{ErrorCode: "PAY_TIM"}); err != nil || n != 0 {
		t.Fatalf("a prefix of a code counted %d (%v), want 0", n, err)
	}
	if (storage.Filter{ErrorCode: "X"}).Empty() {
		t.Fatal("a filter by code is Empty")
	}
}

// Each refused operator change adds one to its count (source, from, to),
// the first creating the row; counts of other moves and sources are apart.
func errorCodeRefusedCounted(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	for range 3 {
		if err := s.CountRefusedTransition(ctx, "argoctl", running, dead); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CountRefusedTransition(ctx, "console", succeeded, running); err != nil {
		t.Fatal(err)
	}
	if err := s.CountRefusedTransition(ctx, "bad source!", succeeded, running); err == nil {
		t.Fatal("a source with a space and '!' was counted")
	}
	got, err := s.RefusedTransitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.RefusedTransition{
		{Source: "argoctl", From: "running", To: "dead", Refused: 3},
		{Source: "console", From: "succeeded", To: "running", Refused: 1},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
}
