package storagetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// errCommitRefused is the refusal the hook injects at a claim's COMMIT.
var errCommitRefused = errors.New("storagetest: COMMIT refused (injected)")

// A claim whose transaction did not commit took nothing: it returns none
// of the rows its statements changed before the COMMIT failed, and those
// rows are still claimable. Whatever a claim returns as taken is leased to
// it in the database; a row it does not return is not (or, after an
// unknown outcome, is named for the give-back). On SQLite the claim's
// UPDATE … RETURNING gave its rows before the COMMIT; a COMMIT refused
// (the context ended by Stop, the file busy) rolled them back while the
// claim returned them, and their functions ran beside the next claimer's
// (the fault checker's exec-once on SQLite around a graceful Stop: an
// attempt started with no write of its claim in the database).
func claimNotCommittedTakesNothing(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	const now = Millis(10_000)
	a := newTask("a", pending, 1000, 1)
	b := newTask("a", pending, 2000, 1)
	insert(t, s, a, b)

	refuse := storage.WithTxHook(ctx, func(_ context.Context, _ int, at storage.TxPoint) error {
		if at == storage.TryCommit {
			return errCommitRefused
		}
		return nil
	})
	got, err := s.ClaimDue(refuse, "w1", now, now+5000, 10, []string{"a"}, nil)
	var unknown *storage.ClaimUnknownError
	errors.As(err, &unknown)
	for _, task := range []*storage.Task{a, b} {
		row := get(t, s, task.ID)
		returned := slices.Contains(idsOf(got), task.ID)
		switch {
		case returned && (row.State != running || row.LeaseOwner != "w1"):
			t.Fatalf("the claim (error %v) returned task %d as taken, but its row is %s leased by %q: its attempt would run beside the next claimer's", err, task.ID, row.State, row.LeaseOwner)
		case !returned && row.State != pending && (unknown == nil || !slices.ContainsFunc(unknown.Rows, func(m storage.MaybeClaimed) bool { return m.ID == task.ID })):
			t.Fatalf("the claim (error %v) did not return task %d, but its row is %s leased by %q and not named for the give-back", err, task.ID, row.State, row.LeaseOwner)
		}
	}
	if err == nil {
		return // the engine's claim took its rows outside the hooked transaction (MySQL's one-trip take)
	}
	if len(got) > 0 && unknown == nil {
		t.Fatalf("the claim failed (%v) and still returned %v as taken", err, idsOf(got))
	}
	if unknown != nil {
		return // MySQL: the rows it may have taken are given back by the instance
	}
	again, err := s.ClaimDue(ctx, "w2", now, now+5000, 10, []string{"a"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(idsOf(again), []int64{a.ID, b.ID}) {
		t.Fatalf("after the refused claim the next claim took %v, want both rows %v", idsOf(again), []int64{a.ID, b.ID})
	}
}
