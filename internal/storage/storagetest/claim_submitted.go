package storagetest

import (
	"database/sql"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// ClaimSubmitted takes only the row one submit wrote (its id and its submit
// token), pending, due, neither leased nor held, without an order key: an
// id handed to another call's row (SQLite gives a rolled-back INSERT's id to
// the next one) is left to the claim, and so is a keyed row (the order
// gate), both unchanged.
func claimSubmittedOnlyItsOwnRow(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	const now = Millis(10_000)
	write := func(task *storage.Task) []byte {
		t.Helper()
		tok := storage.NewSubmitToken()
		if err := s.InsertToken(ctx, nil, task, tok); err != nil {
			t.Fatalf("insert %s: %v", task.Name, err)
		}
		return tok
	}
	other := newTask("b", pending, now-10, 0)
	write(other)
	keyed := newTask("b", pending, now-10, 0)
	keyed.OrderKey = sql.NullString{String: "k", Valid: true}
	keyedTok := write(keyed)
	notDue := newTask("b", pending, now+1, 0)
	notDueTok := write(notDue)
	own := newTask("b", pending, now-10, 0)
	ownTok := write(own)
	for _, c := range []struct {
		name string
		id   int64
		tok  []byte
	}{
		{"another call's row (a token that is not its own)", other.ID, ownTok},
		{"a keyed row, its own token", keyed.ID, keyedTok},
		{"not yet due, its own token", notDue.ID, notDueTok},
	} {
		before := get(t, s, c.id)
		got, err := s.ClaimSubmitted(ctx, c.id, 0, c.tok, "me", now, now+2000)
		if err != nil || got != nil {
			t.Fatalf("%s: ClaimSubmitted = %+v, %v; want nil, nil", c.name, got, err)
		}
		if after := get(t, s, c.id); *after != *before {
			t.Fatalf("%s: row changed by a refused ClaimSubmitted:\n got %+v\nwant %+v", c.name, after, before)
		}
	}
	got, err := s.ClaimSubmitted(ctx, own.ID, own.ShardKey, ownTok, "me", now, now+2000)
	if err != nil || got == nil {
		t.Fatalf("ClaimSubmitted of its own row = %v, %v", got, err)
	}
	if got.State != running || got.LeaseOwner != "me" || !claimLeaseOK(got.LeaseUntil, now+2000) || got.ExecuteTimes != 1 {
		t.Fatalf("claimed own row: %s owner %q lease_until %d attempt %d", got.State, got.LeaseOwner, got.LeaseUntil, got.ExecuteTimes)
	}
	if again, err := s.ClaimSubmitted(ctx, own.ID, own.ShardKey, ownTok, "thief", now, now+2000); err != nil || again != nil {
		t.Fatalf("second ClaimSubmitted = %v, %v; want nil", again, err)
	}
}
