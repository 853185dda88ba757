package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/internal/testwait"
)

// runLog records every run of a task function, by the marker in its
// arguments: which attempt numbers ran, in order.
type runLog struct {
	mu   sync.Mutex
	runs map[string][]int
}

func (l *runLog) add(ctx context.Context, args []byte) string {
	var a struct{ M string }
	_ = json.Unmarshal(args, &a)
	_, attempt, _ := AttemptFrom(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs = map[string][]int{}
	}
	l.runs[a.M] = append(l.runs[a.M], attempt)
	return a.M
}

func (l *runLog) get(m string) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.runs[m]...)
}

func markerArgs(m string) []byte { return []byte(fmt.Sprintf(`{"M":%q}`, m)) }

// rowsWithMarker counts the argo_task rows whose arguments carry marker m.
func rowsWithMarker(t *testing.T, rt *Runtime, m string) int {
	t.Helper()
	var n int
	if err := dbx(rt.store).GetContext(context.Background(), &n, "SELECT COUNT(*) FROM argo_task WHERE task_parameter = ?", string(markerArgs(m))); err != nil {
		t.Fatal(err)
	}
	return n
}

// historyOf renders a task's attempt history as "1:failed,2:succeeded".
func historyOf(t *testing.T, rt *Runtime, id int64) string {
	t.Helper()
	atts, err := rt.Inspector().Attempts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range atts {
		out = append(out, fmt.Sprintf("%d:%s", a.Attempt, a.Outcome))
	}
	return strings.Join(out, ",")
}

// waitSucceeded waits for task id to succeed; on timeout it reports the
// task's state and history.
func waitSucceeded(t *testing.T, rt *Runtime, id int64, timeout time.Duration) *Task {
	t.Helper()
	var task *Task
	if !testwait.Until(timeout, func() bool {
		var err error
		if task, err = rt.Inspector().Get(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		return task.State == StateSucceeded
	}) {
		t.Fatalf("task %d is %s at attempt %d after %s, want succeeded (history %s)", id, task.State, task.ExecuteTimes, timeout, historyOf(t, rt, id))
	}
	return task
}

// proxiedRuntime starts a runtime on a fresh MariaDB database reached
// through a FaultProxy.
func proxiedRuntime(t *testing.T, tweak func(*Config)) (*Runtime, *testdb.FaultProxy) {
	t.Helper()
	dsn := testdb.MySQLDSN(t)
	proxy := testdb.NewFaultProxy(t, dsn)
	cfg := testConfig(proxy.DSN(dsn))
	if tweak != nil {
		tweak(&cfg)
	}
	rt := startRuntime(t, cfg)
	return rt, proxy
}

// A submit whose INSERT committed but whose answer was lost (the connection
// cut right after the server committed) returns nil, writes one row, and
// runs it once as attempt 1: never ErrNotPersisted, never a lease_expired
// attempt for a row written leased whose attempt did not start.
func TestSubmitWhoseAnswerIsLost(t *testing.T) {
	for _, c := range []struct {
		thread    Thread
		uniqueKey string // the second INSERT meets the first's unique key before its token
	}{{Async, ""}, {Sync, ""}, {Async, "k"}} {
		thread := c.thread
		t.Run(fmt.Sprintf("%s/unique-key=%q", thread, c.uniqueKey), func(t *testing.T) {
			rt, proxy := proxiedRuntime(t, nil)
			var log runLog
			def := &TaskDef{Name: "lost.answer", Thread: thread, Policy: fastPolicy(1), Run: func(ctx context.Context, args []byte) error {
				log.add(ctx, args)
				return nil
			}}
			if err := rt.Register(def); err != nil {
				t.Fatal(err)
			}
			proxy.CutAnswer("INSERT INTO argo_task (", 1)
			id, err := rt.Submit(context.Background(), Call{Task: def, Args: markerArgs("only"), UniqueKey: c.uniqueKey})
			if err != nil {
				t.Fatalf("Submit whose INSERT committed: %v, want nil", err)
			}
			if proxy.Cuts() != 1 {
				t.Fatalf("the proxy lost %d answers, want 1", proxy.Cuts())
			}
			if n := rowsWithMarker(t, rt, "only"); n != 1 {
				t.Fatalf("%d rows for the submit, want 1", n)
			}
			task := waitSucceeded(t, rt, id, 10*time.Second)
			if got := log.get("only"); len(got) != 1 || got[0] != 1 || task.ExecuteTimes != 1 {
				t.Fatalf("runs %v, execute_times %d: want one run, attempt 1", got, task.ExecuteTimes)
			}
			if h := historyOf(t, rt, id); h != "1:succeeded" {
				t.Fatalf("history %q, want 1:succeeded (no lease_expired attempt)", h)
			}
		})
	}
}

// 600 submits with deadlines of 0–3 ms: a submit returns nil only with its
// row written, ErrNotPersisted only without; every row runs exactly once
// per attempt, as attempt 1, and none ends dead without running.
func TestSubmitsWithTinyDeadlines(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfig(dsn))
		var log runLog
		run := func(ctx context.Context, args []byte) error { log.add(ctx, args); return nil }
		async := &TaskDef{Name: "tiny.async", Policy: fastPolicy(1), Run: run}
		syncDef := &TaskDef{Name: "tiny.sync", Thread: Sync, Policy: fastPolicy(1), Run: run}
		if err := rt.Register(async, syncDef); err != nil {
			t.Fatal(err)
		}
		const submits = 600
		results := make([]error, submits)
		ids := make([]int64, submits)
		var wg sync.WaitGroup
		submitStart := time.Now()
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < submits; i += 8 {
					def := async
					if i%3 == 0 {
						def = syncDef
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%4)*time.Millisecond)
					ids[i], results[i] = rt.Submit(ctx, Call{Task: def, Args: markerArgs(fmt.Sprint(i))})
					cancel()
				}
			}()
		}
		wg.Wait()
		t.Logf("submits took %s", time.Since(submitStart))
		var counts []struct {
			Payload string `db:"task_parameter"`
			N       int    `db:"n"`
		}
		if err := dbx(rt.store).SelectContext(context.Background(), &counts, "SELECT task_parameter, COUNT(*) AS n FROM argo_task GROUP BY task_parameter"); err != nil {
			t.Fatal(err)
		}
		rowsOf := map[string]int{}
		for _, c := range counts {
			rowsOf[c.Payload] = c.N
		}
		var ok, notPersisted, unknown int
		for i, err := range results {
			rows := rowsOf[string(markerArgs(fmt.Sprint(i)))]
			switch {
			case err == nil:
				ok++
				if rows != 1 {
					t.Errorf("submit %d returned nil with %d rows", i, rows)
				}
			case errors.Is(err, ErrNotPersisted):
				notPersisted++
				if i%4 != 0 { // a deadline of 0 sends nothing: those are expected
					t.Logf("submit %d (deadline %d ms): %v", i, i%4, err)
				}
				if rows != 0 {
					t.Errorf("submit %d returned %v with %d rows", i, err, rows)
				}
			case errors.Is(err, ErrOutcomeUnknown):
				unknown++
			default:
				t.Errorf("submit %d: unexpected error %v", i, err)
			}
		}
		t.Logf("%d submits with 0–3 ms deadlines: %d nil, %d ErrNotPersisted, %d ErrOutcomeUnknown", submits, ok, notPersisted, unknown)
		if unknown > 0 {
			t.Errorf("%d submits returned ErrOutcomeUnknown with the database up", unknown)
		}
		// Every row ends succeeded after one run, as attempt 1.
		defer func(start time.Time) { t.Logf("rows finished %s after the submits", time.Since(start)) }(time.Now())
		waitFor(t, 30*time.Second, "every submitted row to finish", func() bool {
			var open int
			if err := dbx(rt.store).GetContext(context.Background(), &open, "SELECT COUNT(*) FROM argo_task WHERE task_status NOT IN (3, 6, 7, 8)"); err != nil {
				t.Fatal(err)
			}
			return open == 0
		})
		var rows []struct {
			ID      int64  `db:"id"`
			State   State  `db:"task_status"`
			Times   int    `db:"execute_times"`
			Payload string `db:"task_parameter"`
		}
		if err := dbx(rt.store).SelectContext(context.Background(), &rows, "SELECT id, task_status, execute_times, task_parameter FROM argo_task"); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			var a struct{ M string }
			_ = json.Unmarshal([]byte(r.Payload), &a)
			runs := log.get(a.M)
			if r.State != StateSucceeded || r.Times != 1 || len(runs) != 1 || runs[0] != 1 {
				t.Errorf("submit %s (task %d): %s after %d attempts, runs %v; want succeeded after one run as attempt 1 (history %s)", a.M, r.ID, r.State, r.Times, runs, historyOf(t, rt, r.ID))
			}
		}
		if len(rows) != ok {
			t.Errorf("%d rows for %d submits that returned nil", len(rows), ok)
		}
	})
}

// A held retry whose start committed but whose answer was lost runs its
// attempt 2 once, at once, leased by this instance; it is not left running
// unrun until its lease expires and charged a lease_expired attempt.
func TestHeldStartWhoseAnswerIsLost(t *testing.T) {
	rt, proxy := proxiedRuntime(t, nil)
	var log runLog
	def := &TaskDef{Name: "held.lost", Policy: fastPolicy(2), Run: func(ctx context.Context, args []byte) error {
		if _, attempt, _ := AttemptFrom(ctx); attempt == 1 {
			log.add(ctx, args)
			proxy.CutAnswer("SET execute_times = execute_times + 1, task_status = 1", 1)
			return errors.New("first attempt fails")
		}
		log.add(ctx, args)
		return nil
	}}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	id, err := rt.Submit(context.Background(), Call{Task: def, Args: markerArgs("held")})
	if err != nil {
		t.Fatal(err)
	}
	task := waitSucceeded(t, rt, id, 10*time.Second)
	if proxy.Cuts() != 1 {
		t.Fatalf("the proxy lost %d answers, want 1 (the held start)", proxy.Cuts())
	}
	if got := log.get("held"); len(got) != 2 || got[0] != 1 || got[1] != 2 || task.ExecuteTimes != 2 {
		t.Fatalf("runs %v, execute_times %d: want attempts 1 and 2, once each", got, task.ExecuteTimes)
	}
	if h := historyOf(t, rt, id); h != "1:failed,2:succeeded" {
		t.Fatalf("history %q, want 1:failed,2:succeeded", h)
	}
}

// An outcome write (a failure whose retry is held) that committed but whose
// answer was lost counts as written: the outcome is recorded once, the
// retry is held and starts when due, not a lease later, and runs once.
func TestOutcomeWriteWhoseAnswerIsLost(t *testing.T) {
	const lease = 10 * time.Second
	rt, proxy := proxiedRuntime(t, func(c *Config) { c.LeaseDuration = lease })
	var log runLog
	var failedAt time.Time
	var mu sync.Mutex
	def := &TaskDef{Name: "outcome.lost", Policy: fastPolicy(2), Run: func(ctx context.Context, args []byte) error {
		log.add(ctx, args)
		if _, attempt, _ := AttemptFrom(ctx); attempt == 1 {
			proxy.CutAnswer("INSERT INTO argo_task_attempt", 1)
			mu.Lock()
			failedAt = time.Now()
			mu.Unlock()
			return errors.New("first attempt fails")
		}
		return nil
	}}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	id, err := rt.Submit(context.Background(), Call{Task: def, Args: markerArgs("outcome")})
	if err != nil {
		t.Fatal(err)
	}
	task := waitSucceeded(t, rt, id, 2*lease)
	mu.Lock()
	took := time.Since(failedAt)
	mu.Unlock()
	if proxy.Cuts() != 1 {
		t.Fatalf("the proxy lost %d answers, want 1 (the failure's write)", proxy.Cuts())
	}
	if got := log.get("outcome"); len(got) != 2 || got[1] != 2 || task.ExecuteTimes != 2 {
		t.Fatalf("runs %v, execute_times %d: want attempts 1 and 2, once each", got, task.ExecuteTimes)
	}
	if h := historyOf(t, rt, id); h != "1:failed,2:succeeded" {
		t.Fatalf("history %q, want 1:failed,2:succeeded (the failure recorded once)", h)
	}
	if took > lease/2 {
		t.Fatalf("retry finished %s after the failure: the landed outcome was taken for lost and the held retry waited for its hold to run out", took)
	}
}

// Migration 000003 keeps old rows (token NULL, any number of them) and can
// be applied twice (two processes migrating at once).
func TestSubmitTokenMigration(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfig(dsn))
		ctx := context.Background()
		for range 2 {
			if _, err := dbx(rt.store).ExecContext(ctx, "INSERT INTO argo_task (task_id, execute_time, task_parameter, error_msg, fallback_error_msg, discard_reason, gmt_create, gmt_modified) VALUES ('old', 1, '{}', '', '', '', 1, 1)"); err != nil {
				t.Fatalf("a row without a token (written before 000003): %v", err)
			}
		}
		if _, err := dbx(rt.store).ExecContext(ctx, "DELETE FROM argo_schema_migrations WHERE version = 3"); err != nil {
			t.Fatal(err)
		}
		if applied, err := Migrate(ctx, rt.store.DB(), rt.Dialect()); err != nil || len(applied) != 1 {
			t.Fatalf("re-applying 000003: %v, %v", applied, err)
		}
		tok := storage.NewSubmitToken()
		a := &Task{Name: "tok", ExecuteTime: 1, Parameter: "{}", GmtCreate: 1, GmtModified: 1}
		if err := rt.store.InsertToken(ctx, nil, a, tok); err != nil {
			t.Fatal(err)
		}
		b := *a
		b.ID = 0
		if err := rt.store.InsertToken(ctx, nil, &b, tok); err != nil || b.ID != a.ID {
			t.Fatalf("the same INSERT again: id %d, %v; want the first row's id %d and nil", b.ID, err, a.ID)
		}
		var n int
		if err := dbx(rt.store).GetContext(ctx, &n, "SELECT COUNT(*) FROM argo_task WHERE task_id = 'tok'"); err != nil || n != 1 {
			t.Fatalf("%d rows after the same INSERT twice, want 1 (%v)", n, err)
		}
	})
}

// A submit refused by argo's own locking (here a lock wait timeout, 1205,
// behind a transaction that holds the end of the primary key) is retried
// until the lock is free and returns nil; written into the caller's
// transaction, where argo cannot retry, it says what happened to it.
func TestSubmitRetriesLockRefusals(t *testing.T) {
	dsn := testdb.MySQLDSN(t) + "&innodb_lock_wait_timeout=1"
	if !strings.Contains(dsn, "?") {
		dsn = strings.Replace(dsn, "&", "?", 1)
	}
	rt := startRuntime(t, testConfig(dsn))
	var log runLog
	def := &TaskDef{Name: "locked", Policy: fastPolicy(1), Run: func(ctx context.Context, args []byte) error { log.add(ctx, args); return nil }}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Holds the supremum of the primary key: every INSERT waits for it.
	blockFor := func(d time.Duration) {
		blocker, err := rt.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := blocker.ExecContext(ctx, "SELECT id FROM argo_task WHERE id > 0 FOR UPDATE"); err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(d, func() { blocker.Rollback() })
	}

	blockFor(1500 * time.Millisecond)
	id, err := rt.Submit(ctx, Call{Task: def, Args: markerArgs("locked")})
	if err != nil {
		t.Fatalf("Submit behind a lock held 1.5 s (lock wait timeout 1 s): %v, want nil after a retry", err)
	}
	waitState(t, rt, id, StateSucceeded, 10*time.Second)
	if got := log.get("locked"); len(got) != 1 || rowsWithMarker(t, rt, "locked") != 1 {
		t.Fatalf("runs %v, rows %d: want one of each", got, rowsWithMarker(t, rt, "locked"))
	}

	blockFor(3 * time.Second)
	tx, err := rt.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	_, err = rt.SubmitTx(ctx, tx, Call{Task: def, Args: markerArgs("in-tx")})
	if !errors.Is(err, ErrNotPersisted) || !strings.Contains(err.Error(), "1205") || !strings.Contains(err.Error(), "run it again from BEGIN") {
		t.Fatalf("SubmitTx refused by a lock wait timeout: %v, want ErrNotPersisted saying what to do", err)
	}
}

// SubmitTx through an autocommit handle (not a transaction) whose answer is
// lost is resolved like Submit; through a transaction whose connection is
// cut, it is not persisted and says the transaction cannot commit.
func TestSubmitTxWhoseAnswerIsLost(t *testing.T) {
	rt, proxy := proxiedRuntime(t, nil)
	var log runLog
	def := &TaskDef{Name: "tx.lost", Policy: fastPolicy(1), Run: func(ctx context.Context, args []byte) error { log.add(ctx, args); return nil }}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	proxy.CutAnswer("INSERT INTO argo_task (", 1)
	id, err := rt.SubmitTx(ctx, rt.DB(), Call{Task: def, Args: markerArgs("autocommit")})
	if err != nil || rowsWithMarker(t, rt, "autocommit") != 1 {
		t.Fatalf("SubmitTx(autocommit) whose INSERT committed: %v, %d rows; want nil and 1 row", err, rowsWithMarker(t, rt, "autocommit"))
	}
	waitState(t, rt, id, StateSucceeded, 10*time.Second)

	tx, err := rt.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	proxy.CutAnswer("INSERT INTO argo_task (", 1)
	_, err = rt.SubmitTx(ctx, tx, Call{Task: def, Args: markerArgs("in-tx")})
	if !errors.Is(err, ErrNotPersisted) || !strings.Contains(err.Error(), "can no longer commit") {
		t.Fatalf("SubmitTx whose transaction's connection was cut: %v, want ErrNotPersisted saying the transaction cannot commit", err)
	}
	if tx.Commit() == nil {
		t.Fatal("the cut transaction committed")
	}
	if n := rowsWithMarker(t, rt, "in-tx"); n != 0 {
		t.Fatalf("%d rows for a submit that said not persisted", n)
	}
}

// A success whose write committed but whose answer was lost is known as
// recorded: no "outcome not recorded" (lease lost) warning, one run, and
// the row succeeded at attempt 1.
func TestSuccessWriteWhoseAnswerIsLost(t *testing.T) {
	var logs syncBuffer
	rt, proxy := proxiedRuntime(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	var log runLog
	def := &TaskDef{Name: "success.lost", Policy: fastPolicy(1), Run: func(ctx context.Context, args []byte) error {
		log.add(ctx, args)
		proxy.CutAnswer("FORCE INDEX (PRIMARY) SET task_status = 3,", 1)
		return nil
	}}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	id, err := rt.Submit(context.Background(), Call{Task: def, Args: markerArgs("success")})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, rt, id, StateSucceeded, 10*time.Second)
	waitFor(t, 10*time.Second, "the success write's answer to be lost", func() bool { return proxy.Cuts() == 1 })
	if got := log.get("success"); len(got) != 1 {
		t.Fatalf("runs %v, want one", got)
	}
	if h := historyOf(t, rt, id); h != "1:succeeded" {
		t.Fatalf("history %q, want 1:succeeded", h)
	}
	// The write is settled (or retried in the background) before the
	// attempt ends; Stop waits for both.
	if err := rt.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "outcome not recorded") {
		t.Fatalf("a success that landed was logged as not recorded:\n%s", logs.String())
	}
}

// A submit written leased whose INSERT committed, but whose answer was lost
// and the database then unreachable past the floor, returns
// ErrOutcomeUnknown; once the database answers again (within the lease),
// the background resolution finds the row and runs it as attempt 1, never
// charged a lease_expired attempt.
func TestSubmitOutcomeUnknownResolvedLater(t *testing.T) {
	rt, proxy := proxiedRuntime(t, func(c *Config) { c.LeaseDuration = 20 * time.Second })
	var log runLog
	def := &TaskDef{Name: "unknown.later", Policy: fastPolicy(1), Run: func(ctx context.Context, args []byte) error {
		log.add(ctx, args)
		return nil
	}}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	proxy.CutAnswer("INSERT INTO argo_task (", 1)
	proxy.RefuseAfterCut()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := rt.Submit(ctx, Call{Task: def, Args: markerArgs("later")})
	if !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("Submit with the database unreachable after its INSERT committed: %v, want ErrOutcomeUnknown", err)
	}
	if took := time.Since(start); took < storage.SubmitResolveFloor || took > storage.SubmitResolveFloor+5*time.Second {
		t.Fatalf("Submit gave up after %s, want about storage.SubmitResolveFloor (%s)", took, storage.SubmitResolveFloor)
	}
	proxy.SetRefusing(false)
	waitFor(t, 15*time.Second, "the resolved submit to run", func() bool { return len(log.get("later")) > 0 })
	var id int64
	if err := dbx(rt.store).GetContext(context.Background(), &id, "SELECT id FROM argo_task WHERE task_parameter = ?", string(markerArgs("later"))); err != nil {
		t.Fatal(err)
	}
	task := waitSucceeded(t, rt, id, 10*time.Second)
	if got := log.get("later"); len(got) != 1 || got[0] != 1 || task.ExecuteTimes != 1 {
		t.Fatalf("runs %v, execute_times %d: want one run, attempt 1", got, task.ExecuteTimes)
	}
	if h := historyOf(t, rt, id); h != "1:succeeded" {
		t.Fatalf("history %q, want 1:succeeded", h)
	}
}
