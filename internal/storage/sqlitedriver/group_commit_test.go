package sqlitedriver_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/storage/sqlitedriver"
	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/internal/testwait"
)

// groupWait bounds every wait of the group-commit tests.
const groupWait = 20 * time.Second

// waitFor polls cond until it holds, failing with what after groupWait
// (testwait.For).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, groupWait, what, cond)
}

// openLocked opens a Store on a new SQLite file whose write lock the test holds.
func openLocked(t *testing.T) (*storage.Store, *sync.Mutex) {
	t.Helper()
	path := strings.TrimPrefix(testdb.SQLiteDSN(t), "sqlite:")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := storage.Migrate(context.Background(), db, sqlitedriver.Name); err != nil {
		t.Fatal(err)
	}
	lock := &sync.Mutex{}
	s := storage.New(db, sqlitedriver.Name, storage.Options{WriteLock: lock})
	if !s.GroupCommitInUse() {
		t.Fatal("SQLite does not group submits")
	}
	return s, lock
}

type submitResult struct {
	task  *storage.Task
	token []byte
	err   error
	done  chan struct{}
}

func startSubmit(ctx context.Context, s *storage.Store, name string) *submitResult {
	r := &submitResult{token: storage.NewSubmitToken(), done: make(chan struct{}),
		task: &storage.Task{Name: name, State: argotype.StatePending, MaxAttempts: 3, ExecuteTime: 1, Parameter: "{}", RetryPolicyJSON: "{}"}}
	go func() {
		defer close(r.done)
		_, r.err = s.SubmitInsert(ctx, r.task, r.token)
	}()
	return r
}

// Submits arriving while a write is in flight queue for the next group and
// return only once that group is committed: while the write in flight
// cannot end (the test holds the file's write lock), no queued caller
// returns, except one whose context ends while it is still queued, which
// leaves the queue at once with its context's error and never gets a row.
// Then the rest are written, together, each with its own row.
func TestGroupCommitQueuedCallers(t *testing.T) {
	s, lock := openLocked(t)
	ctx := context.Background()
	lock.Lock()
	held := true
	defer func() {
		if held {
			lock.Unlock()
		}
	}()
	first := startSubmit(ctx, s, "first")
	waitFor(t, "the first submit's write in flight", func() bool { inFlight, _ := s.GroupCommitState(); return inFlight })
	leaving, leave := context.WithCancel(ctx)
	var queued []*submitResult
	for i, name := range []string{"q0", "q1", "q2", "q3"} {
		c := ctx
		if i == 2 {
			c = leaving
		}
		queued = append(queued, startSubmit(c, s, name))
		waitFor(t, "submit "+name+" queued", func() bool { _, n := s.GroupCommitState(); return n == i+1 })
	}
	leave()
	select {
	case <-queued[2].done:
	case <-time.After(groupWait):
		t.Fatalf("a queued submit whose context ended did not return within %v", groupWait)
	}
	if !errors.Is(queued[2].err, context.Canceled) {
		t.Fatalf("the queued submit whose context ended: %v, want context.Canceled", queued[2].err)
	}
	if _, n := s.GroupCommitState(); n != 3 {
		t.Fatalf("%d queued after one left, want 3", n)
	}
	for _, r := range append([]*submitResult{first}, queued[0], queued[1], queued[3]) {
		select {
		case <-r.done:
			t.Fatalf("submit %s returned (%v, id %d) while no write could commit", r.task.Name, r.err, r.task.ID)
		default:
		}
	}
	lock.Unlock()
	held = false
	for _, r := range append([]*submitResult{first}, queued[0], queued[1], queued[3]) {
		select {
		case <-r.done:
		case <-time.After(groupWait):
			t.Fatalf("submit %s did not return within %v of the lock's release", r.task.Name, groupWait)
		}
		if r.err != nil {
			t.Fatalf("submit %s: %v", r.task.Name, r.err)
		}
		if id, err := s.SubmitTokenID(ctx, r.token); err != nil || id == 0 || id != r.task.ID {
			t.Fatalf("submit %s was told id %d, its row is %d (%v)", r.task.Name, r.task.ID, id, err)
		}
	}
	if id, err := s.SubmitTokenID(ctx, queued[2].token); err != nil || id != 0 {
		t.Fatalf("the submit that left the queue has a row: %d, %v", id, err)
	}
	if inFlight, n := s.GroupCommitState(); inFlight || n != 0 {
		t.Fatalf("after every submit returned: in flight %v, %d queued; want idle", inFlight, n)
	}
}
