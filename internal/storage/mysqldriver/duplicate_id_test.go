package mysqldriver_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
)

// The reads of a duplicate's id, cut by the proxy (their answers lost: the
// client sees "invalid connection").
const (
	readByKey   = "SELECT id FROM argo_task WHERE task_id = "
	readByToken = "SELECT id FROM argo_task WHERE submit_token = "
)

func dupTask(key string) *storage.Task {
	now := storage.ToMillis(time.Now())
	t := &storage.Task{Name: "dup.id", State: storage.StatePending, MaxAttempts: 1, ExecuteTime: now,
		Parameter: `{}`, PerformanceWay: argotype.Immediate, ThreadWay: argotype.Async,
		RetryPolicyJSON: `{"max_attempts":1}`, GmtCreate: now, GmtModified: now}
	if key != "" {
		t.UniqueKey = sql.NullString{String: key, Valid: true}
	}
	return t
}

// A submit whose unique key is taken answers ErrDuplicate with the existing
// task's id even when the read of that id breaks its connection: the read
// is run again on another connection. Only if every read breaks (a few
// tries) does it answer ErrDuplicateIDUnknown (wrapping ErrDuplicate, id 0,
// saying what to do), and nothing is written. Before the fix a single
// broken read answered ErrDuplicate with id 0 ("and its id could not be
// read: invalid connection"; the fault checker, MariaDB, invariant answer).
func TestDuplicateIDReadWhoseConnectionBreaks(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (*testdb.FaultProxy, *storage.Store, *storage.Task) {
		dsn := testdb.MySQLDSN(t)
		proxy := testdb.NewFaultProxy(t, dsn)
		s := openStore(t, proxy.DSN(dsn), false)
		first := dupTask("k")
		if err := s.Insert(ctx, nil, first); err != nil || first.ID == 0 {
			t.Fatalf("first submit: id %d, %v", first.ID, err)
		}
		return proxy, s, first
	}
	rows := func(t *testing.T, s *storage.Store) int {
		t.Helper()
		var n int
		if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM argo_task WHERE task_id = 'dup.id'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("read breaks once", func(t *testing.T) {
		proxy, s, first := setup(t)
		proxy.CutAnswer(readByKey, 1)
		again := dupTask("k")
		_, err := s.SubmitInsert(ctx, again, storage.NewSubmitToken())
		if proxy.Cuts() != 1 {
			t.Fatalf("the proxy lost %d answers, want 1 (the id's read)", proxy.Cuts())
		}
		if !errors.Is(err, storage.ErrDuplicate) || errors.Is(err, storage.ErrDuplicateIDUnknown) || again.ID != first.ID {
			t.Fatalf("submit with the taken key, its id's read broken once: id %d, %v; want ErrDuplicate and id %d", again.ID, err, first.ID)
		}
		if n := rows(t, s); n != 1 {
			t.Fatalf("%d rows, want 1", n)
		}
	})

	t.Run("every read breaks", func(t *testing.T) {
		proxy, s, _ := setup(t)
		const armed = 1000
		proxy.CutAnswer(readByKey, armed)
		again := dupTask("k")
		_, err := s.SubmitInsert(ctx, again, storage.NewSubmitToken())
		if cuts := proxy.Cuts(); cuts < 2 || cuts >= armed {
			t.Fatalf("the proxy lost %d answers: want a few reads of the id, and then an answer", cuts)
		}
		if !errors.Is(err, storage.ErrDuplicateIDUnknown) || !errors.Is(err, storage.ErrDuplicate) || again.ID != 0 {
			t.Fatalf("submit with the taken key, every read of its id broken: id %d, %v; want ErrDuplicateIDUnknown (wrapping ErrDuplicate) and id 0", again.ID, err)
		}
		if !strings.Contains(err.Error(), "submit again with the same unique key") {
			t.Fatalf("the error does not say what to do: %v", err)
		}
		if n := rows(t, s); n != 1 {
			t.Fatalf("%d rows, want 1", n)
		}
	})

	t.Run("context ends", func(t *testing.T) {
		proxy, s, _ := setup(t)
		proxy.CutAnswer(readByKey, 1000)
		// The caller's context ends once the first read has broken.
		cctx := endAfterCut(ctx, proxy)
		again := dupTask("k")
		_, err := s.SubmitInsert(cctx, again, storage.NewSubmitToken())
		if proxy.Cuts() != 1 {
			t.Fatalf("the proxy lost %d answers, want 1: no read after the caller's context ended", proxy.Cuts())
		}
		if !errors.Is(err, storage.ErrDuplicateIDUnknown) || again.ID != 0 {
			t.Fatalf("submit with the taken key, its context ended after a broken read: id %d, %v; want ErrDuplicateIDUnknown and id 0", again.ID, err)
		}
	})
}

// cutEndedContext is a context that is cancelled as soon as it is asked
// (Err) after the proxy has lost an answer.
type cutEndedContext struct {
	context.Context
	proxy  *testdb.FaultProxy
	cancel context.CancelFunc
}

func endAfterCut(parent context.Context, proxy *testdb.FaultProxy) context.Context {
	ctx, cancel := context.WithCancel(parent)
	return &cutEndedContext{Context: ctx, proxy: proxy, cancel: cancel}
}

func (c *cutEndedContext) Err() error {
	if c.proxy.Cuts() > 0 {
		c.cancel()
	}
	return c.Context.Err()
}

// An INSERT run again under its own submit token (the resolution of a lost
// answer) finds its row by the token even when that read breaks its
// connection: nil, with the row's id. If every read breaks, the error says
// whose row it is is not known, and it is no refusal (the resolution goes
// on). Before the fix one broken read answered "this submit's row exists,
// but its id could not be read" with no id.
func TestSubmitTokenReadWhoseConnectionBreaks(t *testing.T) {
	ctx := context.Background()
	for _, key := range []string{"", "k"} {
		t.Run("key="+key, func(t *testing.T) {
			dsn := testdb.MySQLDSN(t)
			proxy := testdb.NewFaultProxy(t, dsn)
			s := openStore(t, proxy.DSN(dsn), false)
			token := storage.NewSubmitToken()
			first := dupTask(key)
			if err := s.InsertToken(ctx, nil, first, token); err != nil || first.ID == 0 {
				t.Fatalf("first run: id %d, %v", first.ID, err)
			}

			proxy.CutAnswer(readByToken, 1)
			again := dupTask(key)
			if err := s.InsertToken(ctx, nil, again, token); err != nil || again.ID != first.ID || proxy.Cuts() != 1 {
				t.Fatalf("the same INSERT again, its token's read broken once: id %d, %v (%d answers lost); want nil and id %d", again.ID, err, proxy.Cuts(), first.ID)
			}

			proxy.CutAnswer(readByToken, 1000)
			again = dupTask(key)
			err := s.InsertToken(ctx, nil, again, token)
			if err == nil || errors.Is(err, storage.ErrDuplicate) || s.OutcomeKnown(err) || again.ID != 0 {
				t.Fatalf("the same INSERT again, every read of its token broken: id %d, %v; want an error whose outcome is not known (resolved further)", again.ID, err)
			}
			if !strings.Contains(err.Error(), "could not be read") {
				t.Fatalf("the error does not say what happened: %v", err)
			}
		})
	}
}

// A submit whose INSERT's answer is lost, and whose resolution's read by
// the token then breaks too, still answers nil with its row's id: the
// read is run again.
func TestSubmitLostAnswerThenTokenReadBreaks(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.MySQLDSN(t)
	proxy := testdb.NewFaultProxy(t, dsn)
	s := openStore(t, proxy.DSN(dsn), false)
	proxy.CutAnswer("INSERT INTO argo_task (", 1)
	proxy.CutAnswer(readByToken, 1)
	task := dupTask("")
	resolved, err := s.SubmitInsert(ctx, task, storage.NewSubmitToken())
	if proxy.Cuts() != 2 {
		t.Fatalf("the proxy lost %d answers, want 2 (the INSERT's, then the token's read)", proxy.Cuts())
	}
	var id int64
	if qerr := s.DB().QueryRowContext(ctx, "SELECT id FROM argo_task WHERE task_id = 'dup.id'").Scan(&id); qerr != nil {
		t.Fatal(qerr)
	}
	if err != nil || !resolved || task.ID != id {
		t.Fatalf("submit: id %d, resolved %v, %v; want nil, resolved, and its row's id %d", task.ID, resolved, err, id)
	}
}

// Two INSERTs with one unique key in one transaction (SubmitTx, a group):
// the second is ErrDuplicate saying the key is held by the same
// transaction, not ErrDuplicateIDUnknown (no read outside the transaction
// sees the first row: there is no id to read, and nothing broke).
func TestDuplicateKeyInOwnTransaction(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, testdb.MySQLDSN(t), false)
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	first := dupTask("k")
	if err := s.InsertToken(ctx, tx, first, storage.NewSubmitToken()); err != nil {
		t.Fatal(err)
	}
	again := dupTask("k")
	err = s.InsertToken(ctx, tx, again, storage.NewSubmitToken())
	if !errors.Is(err, storage.ErrDuplicate) || errors.Is(err, storage.ErrDuplicateIDUnknown) || !strings.Contains(err.Error(), "same transaction") {
		t.Fatalf("the key twice in one transaction: %v; want ErrDuplicate saying the same transaction holds it", err)
	}
}
