package storagetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// insertCases: task rows written and read back, unique keys, submit tokens
// and the resolution of an insert whose answer was lost.
func insertCases() []testCase {
	return []testCase{
		{"RoundTrip", insertRoundTrip},
		{"UniqueKeys", insertUniqueKeys},
		{"UniqueKeyRace", insertUniqueKeyRace},
		{"SubmitTokenMakesInsertIdempotent", insertSubmitToken},
		{"ResolveInsert", insertResolve},
		{"CallersTransaction", insertCallersTransaction},
		{"ConfirmSubmitLeaseFence", insertConfirmSubmitLease},
	}
}

// Every column written reads back as written; a missing id is ErrNotFound.
func insertRoundTrip(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	in := newTask("pkg.F", pending, 1000, 5)
	in.ParameterTypes, in.MethodName, in.MethodSignName = "string,int", "F", "func(string, int) error"
	in.AlertExpression, in.AlertActionBeanName, in.FallbackClassName = "executeTimes > 1", "page", "fb"
	in.ExecuteIntervalSec, in.DelayTime, in.MaxAttempts = 7, 9, 4
	in.UniqueKey = nullKey("order-1")
	insert(t, s, in)
	if in.ID == 0 {
		t.Fatal("insert set no id")
	}
	if got := get(t, s, in.ID); *got != *in {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, in)
	}
	if state, found, err := s.TaskState(ctx, in.ID); err != nil || !found || state != pending {
		t.Fatalf("TaskState = %s, %v, %v; want pending, found", state, found, err)
	}
	missing := in.ID + 1_000_000
	if _, err := s.Get(ctx, missing); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get of a missing id: %v, want ErrNotFound", err)
	}
	if _, found, err := s.TaskState(ctx, missing); err != nil || found {
		t.Fatalf("TaskState of a missing id: found %v, %v", found, err)
	}
}

// A unique key is unique per task name and compared byte for byte: a
// second task with the same name and key is refused with ErrDuplicate and
// the first task's id; the same key under another name, a key that differs
// in case or trailing space, and any number of tasks without a key are new
// tasks.
func insertUniqueKeys(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	first := newTask("keyed", pending, 1, 0)
	first.UniqueKey = nullKey("k")
	insert(t, s, first)
	again := newTask("keyed", pending, 2, 0)
	again.UniqueKey = nullKey("k")
	if err := s.Insert(ctx, nil, again); !errors.Is(err, storage.ErrDuplicate) || again.ID != first.ID {
		t.Fatalf("same name and key: id %d, %v; want ErrDuplicate with id %d", again.ID, err, first.ID)
	}
	ids := map[int64]string{first.ID: "keyed/k"}
	for _, c := range []struct{ name, key string }{{"other", "k"}, {"keyed", "k "}, {"keyed", "K"}, {"keyed", "k\xff"}} {
		task := newTask(c.name, pending, 3, 0)
		task.UniqueKey = nullKey(c.key)
		insert(t, s, task)
		if prev, dup := ids[task.ID]; dup {
			t.Fatalf("%s/%q shares id %d with %s", c.name, c.key, task.ID, prev)
		}
		ids[task.ID] = c.name + "/" + c.key
		if got := get(t, s, task.ID); got.UniqueKey != task.UniqueKey {
			t.Fatalf("key %q stored as %q", c.key, got.UniqueKey.String)
		}
	}
	insert(t, s, newTask("keyed", pending, 4, 0), newTask("keyed", pending, 4, 0))
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task"); n != 7 {
		t.Fatalf("%d rows, want 7 (no row for the duplicate)", n)
	}
}

// Submits racing with the same name and unique key: exactly one writes a
// row, every other gets ErrDuplicate and that row's id.
func insertUniqueKeyRace(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	const racers = 8
	type result struct {
		id  int64
		err error
	}
	results := make([]result, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task := newTask("race", pending, 1, 0)
			task.UniqueKey = nullKey("once")
			_, err := s.SubmitInsert(ctx, task, storage.NewSubmitToken())
			results[i] = result{task.ID, err}
		}()
	}
	wg.Wait()
	var winners int
	var winner int64
	for _, r := range results {
		switch {
		case r.err == nil:
			winners++
			winner = r.id
		case !errors.Is(r.err, storage.ErrDuplicate):
			t.Fatalf("racing submit: %v, want nil or ErrDuplicate", r.err)
		}
	}
	if winners != 1 {
		t.Fatalf("%d racing submits wrote a row, want 1", winners)
	}
	for _, r := range results {
		if r.id != winner {
			t.Fatalf("a racing submit was told id %d, the row is %d", r.id, winner)
		}
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task"); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
}

// The same INSERT run again under the same submit token (what resolving a
// lost answer does) writes no second row and returns the first row's id,
// also when the row has a unique key (MySQL reports the key's clash before
// the token's); a new token with that key is a duplicate.
func insertSubmitToken(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	for _, key := range []string{"", "k"} {
		tok := storage.NewSubmitToken()
		a := newTask("tok"+key, pending, 1, 0)
		if key != "" {
			a.UniqueKey = nullKey(key)
		}
		if err := s.InsertToken(ctx, nil, a, tok); err != nil {
			t.Fatal(err)
		}
		b := *a
		b.ID = 0
		if err := s.InsertToken(ctx, nil, &b, tok); err != nil || b.ID != a.ID {
			t.Fatalf("key %q: the same INSERT again: id %d, %v; want nil and the first row's id %d", key, b.ID, err, a.ID)
		}
		if id, err := s.SubmitTokenID(ctx, tok); err != nil || id != a.ID {
			t.Fatalf("SubmitTokenID = %d, %v; want %d", id, err, a.ID)
		}
		if n := count(t, s, "SELECT COUNT(*) FROM argo_task WHERE task_id = ?", a.Name); n != 1 {
			t.Fatalf("key %q: %d rows after the same INSERT twice, want 1", key, n)
		}
		if key != "" {
			c := *a
			c.ID = 0
			if err := s.InsertToken(ctx, nil, &c, storage.NewSubmitToken()); !errors.Is(err, storage.ErrDuplicate) || c.ID != a.ID {
				t.Fatalf("another submit with the key: id %d, %v; want ErrDuplicate and id %d", c.ID, err, a.ID)
			}
		}
	}
	if id, err := s.SubmitTokenID(ctx, storage.NewSubmitToken()); err != nil || id != 0 {
		t.Fatalf("SubmitTokenID of an unused token = %d, %v; want 0", id, err)
	}
}

// ResolveInsert settles an insert whose answer was lost: if the first run
// landed it returns that row's id and writes nothing more; if it did not,
// it writes the row now; a key another submit holds is ErrDuplicate.
func insertResolve(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	lost := io.ErrUnexpectedEOF // the kind of failure that leaves the outcome unknown

	landed, tok := newTask("landed", pending, 1, 0), storage.NewSubmitToken()
	if err := s.InsertToken(ctx, nil, landed, tok); err != nil {
		t.Fatal(err)
	}
	retry := *landed
	retry.ID = 0
	if err := s.ResolveInsert(ctx, &retry, tok, lost); err != nil || retry.ID != landed.ID {
		t.Fatalf("resolving a landed insert: id %d, %v; want nil and id %d", retry.ID, err, landed.ID)
	}

	never := newTask("never", pending, 1, 0)
	if err := s.ResolveInsert(ctx, never, storage.NewSubmitToken(), lost); err != nil || never.ID == 0 {
		t.Fatalf("resolving an insert that did not land: id %d, %v; want the row written", never.ID, err)
	}
	get(t, s, never.ID)

	holder := newTask("held-key", pending, 1, 0)
	holder.UniqueKey = nullKey("k")
	insert(t, s, holder)
	other := newTask("held-key", pending, 1, 0)
	other.UniqueKey = nullKey("k")
	if err := s.ResolveInsert(ctx, other, storage.NewSubmitToken(), lost); !errors.Is(err, storage.ErrDuplicate) || other.ID != holder.ID {
		t.Fatalf("resolving an insert whose key another submit holds: id %d, %v; want ErrDuplicate and id %d", other.ID, err, holder.ID)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task"); n != 3 {
		t.Fatalf("%d rows, want 3", n)
	}
	if resolved, err := s.SubmitInsert(ctx, newTask("plain", pending, 1, 0), storage.NewSubmitToken()); err != nil || resolved {
		t.Fatalf("a plain submit: resolved %v, %v; want nil without a resolution", resolved, err)
	}
}

// A task written into the caller's transaction exists only if that
// transaction commits; an insert there whose answer was lost is taken out
// of the transaction again (ResolveTxInsert), which still commits, without
// the row.
func insertCallersTransaction(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	inTx := func(fn func(tx storage.Execer) error, commit bool) {
		t.Helper()
		tx, err := s.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := fn(tx); err != nil {
			tx.Rollback()
			t.Fatal(err)
		}
		if !commit {
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	rolledBack, committed := newTask("tx", pending, 1, 0), newTask("tx", pending, 1, 0)
	rolledBack.MethodSignName, committed.MethodSignName = "rolled back", "committed"
	inTx(func(tx storage.Execer) error { return s.Insert(ctx, tx, rolledBack) }, false)
	inTx(func(tx storage.Execer) error { return s.Insert(ctx, tx, committed) }, true)
	// (By a mark of their own, not by id: an engine may hand the rolled-back
	// row's id out again.)
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task WHERE method_sign_name = 'rolled back'"); n != 0 {
		t.Fatalf("%d rows of a rolled-back transaction", n)
	}
	if row := get(t, s, committed.ID); row.MethodSignName != "committed" {
		t.Fatalf("the committed task's id reads %+v", row)
	}

	taken, tok := newTask("tx.lost", pending, 1, 0), storage.NewSubmitToken()
	inTx(func(tx storage.Execer) error {
		if err := s.InsertToken(ctx, tx, taken, tok); err != nil {
			return err
		}
		err := s.ResolveTxInsert(ctx, tx, taken, tok, io.ErrUnexpectedEOF)
		if !errors.Is(err, storage.ErrNotPersisted) || !strings.Contains(err.Error(), "can still commit") {
			return fmt.Errorf("ResolveTxInsert in a transaction: %v, want ErrNotPersisted saying the transaction can still commit", err)
		}
		return nil
	}, true)
	if id, err := s.SubmitTokenID(ctx, tok); err != nil || id != 0 {
		t.Fatalf("the row taken out of the transaction was committed: id %d, %v", id, err)
	}

	// Through an Execer that is no transaction (autocommit), the INSERT is
	// run again, as for a submit of the Store's own.
	auto, tok2 := newTask("tx.auto", pending, 1, 0), storage.NewSubmitToken()
	if err := s.InsertToken(ctx, s.DB(), auto, tok2); err != nil {
		t.Fatal(err)
	}
	again := *auto
	again.ID = 0
	if err := s.ResolveTxInsert(ctx, s.DB(), &again, tok2, io.ErrUnexpectedEOF); err != nil || again.ID != auto.ID {
		t.Fatalf("ResolveTxInsert through autocommit: id %d, %v; want nil and id %d", again.ID, err, auto.ID)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task WHERE task_id = 'tx.auto'"); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
}

// ConfirmSubmitLease renews only a first attempt still leased by its owner
// and not started: a rescued, finished, foreign or started row is left alone.
func insertConfirmSubmitLease(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := context.Background()
	const until = Millis(1_000_000)
	for _, c := range []struct {
		change string
		want   bool
	}{
		{"", true},
		{"lease_until = lease_until + 1", true},      // already renewed to that time: MySQL changes nothing
		{"task_status = 2, lease_owner = ''", false}, // rescued
		{"lease_owner = 'other'", false},
		{"execute_times = 2", false},
		{"attempt_started_at = 7", false}, // it ran
	} {
		task := leasedTask("confirm", running, 1, 0, "me", 1, until)
		insert(t, s, task)
		if c.change != "" {
			exec(t, s, "UPDATE argo_task SET "+c.change+" WHERE id = ?", task.ID)
		}
		before := get(t, s, task.ID)
		ok, err := s.ConfirmSubmitLease(ctx, task.ID, task.ShardKey, "me", until+1)
		if err != nil || ok != c.want {
			t.Errorf("after %q: confirmed %v (%v), want %v", c.change, ok, err, c.want)
		}
		if after := get(t, s, task.ID); !c.want && *after != *before {
			t.Errorf("after %q: a refused confirmation changed the row:\n got %+v\nwant %+v", c.change, after, before)
		}
	}
}
