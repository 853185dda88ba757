package storagetest

import (
	"slices"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// orderOverlapCases: per order key, never two calls started at once, also
// when a keyed row with a smaller id becomes visible after a later call of
// its key was taken (MySQL hands out the id at the INSERT, not at the
// commit: an outbox submit in a long transaction). docs/semantics.md,
// "Ordered keys".
func orderOverlapCases() []testCase {
	return []testCase{
		{"OutboxCommittedAfterALaterCallStarted", orderOutboxLate},
		{"TakeRechecksTheKey", orderTakeRechecks},
		{"HolderRetriesBeforeAnEarlierCall", orderHolderRetries},
	}
}

// oneWriterSkip skips a case whose interleaving cannot happen on an engine
// with one writer at a time, saying why.
func oneWriterSkip(t *testing.T, e Engine) {
	t.Helper()
	if e.OneWriter {
		t.Skip("one writer at a time: a transaction that inserted a row holds the write lock until it ends, so no later row is inserted meanwhile and ids follow commit order")
	}
}

// The break (2a): N, a keyed call written inside a transaction left open
// (the outbox), holds id N; M, a later call of the key, gets a larger id,
// commits, and is claimed. When the transaction commits, N saw no earlier
// unfinished row of its key and was claimed while M ran. Now N waits until
// M has ended.
func orderOutboxLate(t *testing.T, e Engine) {
	oneWriterSkip(t, e)
	s := e.Open(t)
	ctx := ctxFor(t)
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	n := keyed("ob", "k", pending, 100)
	if err := s.Insert(ctx, tx, n); err != nil {
		t.Fatal(err)
	}
	m := keyed("ob", "k", pending, 100)
	insert(t, s, m)
	if m.ID < n.ID {
		t.Fatalf("the later call got id %d, before the open transaction's %d: the case needs ids handed out at the insert", m.ID, n.ID)
	}
	if got := claimIDs(t, s, "w1", 200, 10, "ob"); !slices.Equal(got, []int64{m.ID}) {
		t.Fatalf("claim before the commit took %v, want the later call %d (the earlier one is not committed)", got, m.ID)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := claimIDs(t, s, "w2", 300, 10, "ob"); len(got) != 0 {
		t.Fatalf("claim took %v while call %d of the same key runs", got, m.ID)
	}
	mRow := get(t, s, m.ID)
	if err := s.Finish(ctx, success(mRow), 400); err != nil {
		t.Fatal(err)
	}
	if got := claimIDs(t, s, "w2", 500, 10, "ob"); !slices.Equal(got, []int64{n.ID}) {
		t.Fatalf("claim after the later call ended took %v, want %d", got, n.ID)
	}
}

// The take itself re-checks the key under the key's lock: a candidate read
// before another call of its key was taken (or read past the gate) is not
// taken while that call runs. P becomes a keyed row with a smaller id after
// M of its key started (what the outbox commit does); neither the claim nor
// a take of P as read takes it until M has ended.
func orderTakeRechecks(t *testing.T, e Engine) {
	oneWriterSkip(t, e)
	s := e.Open(t)
	ctx := ctxFor(t)
	p := newTask("rc", pending, 1_000_000, 0) // not yet keyed, not due
	insert(t, s, p)
	m := keyed("rc", "k", pending, 100)
	insert(t, s, m)
	if got := claimIDs(t, s, "w1", 200, 10, "rc"); !slices.Equal(got, []int64{m.ID}) {
		t.Fatalf("claim took %v, want %d", got, m.ID)
	}
	exec(t, s, "UPDATE argo_task SET order_key = 'k', execute_time = 100 WHERE id = ?", p.ID)
	asRead := get(t, s, p.ID)
	took, err := s.TakeCandidates(ctx, "w2", 300, 300, 60_000, []*storage.Task{asRead})
	if err != nil {
		t.Fatal(err)
	}
	if len(took) != 0 {
		t.Fatalf("the take took %v while call %d of the same key runs", idsOf(took), m.ID)
	}
	if got := claimIDs(t, s, "w2", 300, 10, "rc"); len(got) != 0 {
		t.Fatalf("claim took %v while call %d of the same key runs", got, m.ID)
	}
	if err := s.Finish(ctx, success(get(t, s, m.ID)), 400); err != nil {
		t.Fatal(err)
	}
	took, err = s.TakeCandidates(ctx, "w2", 500, 500, 60_000, []*storage.Task{asRead})
	if err != nil || !slices.Equal(idsOf(took), []int64{p.ID}) {
		t.Fatalf("the take after the running call ended took %v, %v; want %d", idsOf(took), err, p.ID)
	}
}

// The call that holds the key goes on to its retries (and its fallback)
// although a call of the key with a smaller id became visible meanwhile:
// M, taken first, fails and is retrying; P, with a smaller id, waits for
// M's end; M's retry is not held back behind P (which waits for M: neither
// would ever start).
func orderHolderRetries(t *testing.T, e Engine) {
	oneWriterSkip(t, e)
	s := e.Open(t)
	ctx := ctxFor(t)
	p := newTask("hr", pending, 1_000_000, 0)
	insert(t, s, p)
	m := keyed("hr", "k", pending, 100)
	insert(t, s, m)
	if got := claimIDs(t, s, "w1", 200, 10, "hr"); !slices.Equal(got, []int64{m.ID}) {
		t.Fatalf("claim took %v, want %d", got, m.ID)
	}
	exec(t, s, "UPDATE argo_task SET order_key = 'k', execute_time = 100 WHERE id = ?", p.ID)
	if err := s.Finish(ctx, failure(get(t, s, m.ID), retrying, 300, "not yet"), 250); err != nil {
		t.Fatal(err)
	}
	if got := claimIDs(t, s, "w2", 400, 10, "hr"); !slices.Equal(got, []int64{m.ID}) {
		t.Fatalf("claim while the key's holder retries took %v, want the holder's retry %d (not %d)", got, m.ID, p.ID)
	}
	if err := s.Finish(ctx, failure(get(t, s, m.ID), exhausted, 500, "gave up"), 500); err != nil {
		t.Fatal(err)
	}
	if got := claimIDs(t, s, "w2", 600, 10, "hr"); !slices.Equal(got, []int64{m.ID}) {
		t.Fatalf("claim of the holder's fallback took %v, want %d", got, m.ID)
	}
	if got := get(t, s, m.ID).State; got != fallingBack {
		t.Fatalf("holder is %s, want falling_back", got)
	}
	if err := s.Finish(ctx, storage.Finishing{Fence: fenceOf(get(t, s, m.ID)), To: recovered, Due: 700}, 700); err != nil {
		t.Fatal(err)
	}
	if got := claimIDs(t, s, "w2", 800, 10, "hr"); !slices.Equal(got, []int64{p.ID}) {
		t.Fatalf("claim after the holder ended took %v, want %d", got, p.ID)
	}
}
