package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
	argosql "github.com/argo-retry/argo/sql"
)

func TestSucceedsAfterTransientFailures(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfig(dsn))
		var n atomic.Int32
		def := &TaskDef{Name: "flaky", Policy: fastPolicy(5), Run: func(ctx context.Context, args []byte) error {
			if n.Add(1) <= 2 {
				return errors.New("peer down")
			}
			return nil
		}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		task := waitState(t, rt, id, StateSucceeded, 10*time.Second)
		if task.ExecuteTimes != 3 || n.Load() != 3 {
			t.Fatalf("execute_times = %d, calls = %d, want 3 and 3", task.ExecuteTimes, n.Load())
		}
		atts, err := rt.Inspector().Attempts(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var outcomes []string
		for _, a := range atts {
			outcomes = append(outcomes, fmt.Sprintf("%d:%s", a.Attempt, a.Outcome))
		}
		if got := strings.Join(outcomes, ","); got != "1:failed,2:failed,3:succeeded" {
			t.Fatalf("history = %s", got)
		}
		if atts[0].BackoffMs != 10 {
			t.Fatalf("backoff recorded = %d ms, want 10", atts[0].BackoffMs)
		}
	})
}

func TestSyncSubmitReturnsFirstAttempt(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfig(dsn))
		var n atomic.Int32
		def := &TaskDef{Name: "sync", Thread: Sync, Policy: fastPolicy(3), Run: func(ctx context.Context, args []byte) error {
			_, attempt, _ := AttemptFrom(ctx)
			if n.Add(1) == 1 {
				return fmt.Errorf("attempt %d key %s failed", attempt, IdempotencyKey(ctx))
			}
			return nil
		}}
		rt.Register(def)
		id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
		var ae *AttemptError
		if !errors.As(err, &ae) || !ae.WillRetry || ae.Attempt != 1 {
			t.Fatalf("Submit err = %v, want *AttemptError attempt 1 will retry", err)
		}
		if want := fmt.Sprintf("key argo-%d-1", id); !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q lacks idempotency key %q", err, want)
		}
		waitState(t, rt, id, StateSucceeded, 10*time.Second)

		id2, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
		if err != nil {
			t.Fatalf("second sync submit: %v", err)
		}
		if task, _ := rt.Inspector().Get(context.Background(), id2); task.State != StateSucceeded {
			t.Fatalf("sync submit returned before its attempt was recorded: state %s", task.State)
		}
	})
}

func TestFallbackAndDead(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfig(dsn))
		var fbArgs atomic.Value
		recovered := &TaskDef{Name: "recovers", Policy: fastPolicy(2),
			Run: func(ctx context.Context, args []byte) error { return errors.New("always") },
			Fallback: func(ctx context.Context, args []byte, lastErr error) error {
				fbArgs.Store(string(args) + "|" + lastErr.Error() + "|" + FallbackCause(ctx).Error())
				return nil
			}, FallbackName: "byHand"}
		dead := &TaskDef{Name: "dies", Policy: fastPolicy(2),
			Run:      func(ctx context.Context, args []byte) error { return errors.New("always") },
			Fallback: func(ctx context.Context, args []byte, lastErr error) error { return errors.New("fallback broke") }}
		noFallback := &TaskDef{Name: "nofallback", Policy: fastPolicy(1),
			Run: func(ctx context.Context, args []byte) error { return errors.New("always") }}
		rt.Register(recovered, dead, noFallback)
		ctx := context.Background()
		id1, _ := rt.Submit(ctx, Call{Task: recovered, Args: []byte(`{"slot":7}`)})
		id2, _ := rt.Submit(ctx, Call{Task: dead, Args: []byte(`{}`)})
		id3, _ := rt.Submit(ctx, Call{Task: noFallback, Args: []byte(`{}`)})
		task := waitState(t, rt, id1, StateRecovered, 10*time.Second)
		if got := fbArgs.Load(); got != `{"slot":7}|always|always` {
			t.Fatalf("fallback saw %v", got)
		}
		if task.ExecuteTimes != 2 {
			t.Fatalf("execute_times = %d, want 2", task.ExecuteTimes)
		}
		task = waitState(t, rt, id2, StateDead, 10*time.Second)
		if task.FallbackErrorMsg != "fallback broke" || task.ErrorMsg != "always" {
			t.Fatalf("dead task: error_msg %q fallback_error_msg %q", task.ErrorMsg, task.FallbackErrorMsg)
		}
		waitState(t, rt, id3, StateDead, 10*time.Second)
	})
}

func TestPermanentPanicTimeout(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfig(dsn))
		var calls calls
		perm := &TaskDef{Name: "perm", Policy: fastPolicy(5), Run: func(ctx context.Context, args []byte) error {
			calls.inc("perm")
			return Permanent(errors.New("400 bad request"))
		}}
		panics := &TaskDef{Name: "panics", Policy: fastPolicy(2), Run: func(ctx context.Context, args []byte) error {
			calls.inc("panics")
			var m map[string]int
			m["x"] = 1 // nil map write
			return nil
		}}
		slow := &TaskDef{Name: "slow", Policy: RetryPolicy{MaxAttempts: 1, Backoff: BackoffFixed, Timeout: 50 * time.Millisecond}, Run: func(ctx context.Context, args []byte) error {
			<-ctx.Done()
			return ctx.Err()
		}}
		rt.Register(perm, panics, slow)
		ctx := context.Background()
		id1, _ := rt.Submit(ctx, Call{Task: perm, Args: []byte(`{}`)})
		id2, _ := rt.Submit(ctx, Call{Task: panics, Args: []byte(`{}`)})
		id3, _ := rt.Submit(ctx, Call{Task: slow, Args: []byte(`{}`)})
		task := waitState(t, rt, id1, StateDead, 10*time.Second)
		if task.ExecuteTimes != 1 || calls.get("perm") != 1 {
			t.Fatalf("permanent error retried: execute_times %d", task.ExecuteTimes)
		}
		waitState(t, rt, id2, StateDead, 10*time.Second)
		atts, _ := rt.Inspector().Attempts(ctx, id2)
		if len(atts) < 2 || atts[0].Outcome != OutcomePanicked || !strings.Contains(atts[0].Error, "assignment to entry in nil map") || !strings.Contains(atts[0].Error, "runtime_test.go") {
			t.Fatalf("panic not recorded with its stack: %+v", atts)
		}
		waitState(t, rt, id3, StateDead, 10*time.Second)
		atts, _ = rt.Inspector().Attempts(ctx, id3)
		if atts[0].Outcome != OutcomeTimeout {
			t.Fatalf("timeout outcome = %q", atts[0].Outcome)
		}
	})
}

func TestAlertActionsNeverBlockWork(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig(dsn)
		cfg.AlertWorkers, cfg.AlertTimeout = 1, 100*time.Millisecond
		rt := startRuntime(t, cfg)
		var fired atomic.Int32
		block := make(chan struct{})
		t.Cleanup(func() { close(block) })
		def := &TaskDef{Name: "alerting", Policy: fastPolicy(4), Alert: "executeTimes >= 2",
			Run: func(ctx context.Context, args []byte) error { return errors.New("down") },
			AlertAction: func(ctx context.Context, ev AlertEvent) error {
				switch fired.Add(1) {
				case 1:
					<-block // ignores its context: abandoned after AlertTimeout
				case 2:
					panic("alert action panics")
				}
				if ev.ExecuteTimes < 2 || ev.TaskName != "alerting" {
					t.Errorf("alert event %+v", ev)
				}
				return errors.New("pager down")
			}}
		rt.Register(def)
		start := time.Now()
		id, _ := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
		waitState(t, rt, id, StateDead, 10*time.Second)
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("alert actions delayed the task: %s", el)
		}
		waitFor(t, 5*time.Second, "3 alert actions (attempts 2, 3, 4)", func() bool { return fired.Load() == 3 })
	})
}

func TestTransactionalSubmit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfig(dsn))
		ran := make(chan int64, 2)
		def := &TaskDef{Name: "outbox", Policy: fastPolicy(3), Run: func(ctx context.Context, args []byte) error {
			id, _, _ := AttemptFrom(ctx)
			ran <- id
			return nil
		}}
		rt.Register(def)
		ctx := context.Background()

		tx, err := rt.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		rolledBack, err := rt.SubmitTx(ctx, tx, Call{Task: def, Args: []byte(`{"n":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		tx.Rollback()
		if _, err := rt.Inspector().Get(ctx, rolledBack); !errors.Is(err, ErrNotFound) {
			t.Fatalf("rolled-back task exists: %v", err)
		}

		tx, _ = rt.DB().BeginTx(ctx, nil)
		committed, err := rt.SubmitTx(ctx, tx, Call{Task: def, Args: []byte(`{"n":2}`)})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case id := <-ran:
			t.Fatalf("task %d ran before commit", id)
		case <-time.After(100 * time.Millisecond):
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		select {
		case id := <-ran:
			if id != committed {
				t.Fatalf("ran %d, want %d", id, committed)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("committed task did not run")
		}
		waitState(t, rt, committed, StateSucceeded, 5*time.Second)
	})
}

func TestArgumentsRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfig(dsn))
		got := make(chan string, 1)
		def := &TaskDef{Name: "big", Policy: fastPolicy(1), Run: func(ctx context.Context, args []byte) error {
			got <- string(args)
			return nil
		}}
		rt.Register(def)
		big := `{"text":"` + strings.Repeat("仓储 системы 🚚 ", 1<<16) + `"}`
		if len(big) < 1<<20 {
			t.Fatalf("payload only %d bytes", len(big))
		}
		id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(big)})
		if err != nil {
			t.Fatal(err)
		}
		if s := receive(t, got, 10*time.Second, "the task to run"); s != big {
			t.Fatalf("arguments changed in transit: %d bytes, want %d", len(s), len(big))
		}
		task := waitState(t, rt, id, StateSucceeded, 5*time.Second)
		if task.Parameter != big {
			t.Fatal("stored arguments differ")
		}
	})
}

func TestUnknownHandlerAndUndecodableStayVisible(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfig(dsn))
		ctx := context.Background()
		orphan := &TaskDef{Name: "renamed.Func", Policy: fastPolicy(3)}
		id, err := rt.Submit(ctx, Call{Task: orphan, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "no-handler error on the row", func() bool {
			task, _ := rt.Inspector().Get(ctx, id)
			return strings.Contains(task.ErrorMsg, "no handler registered")
		})
		task, _ := rt.Inspector().Get(ctx, id)
		if task.State != StatePending || task.ExecuteTimes != 0 {
			t.Fatalf("orphan task: state %s execute_times %d, want pending 0", task.State, task.ExecuteTimes)
		}
		var runs atomic.Int32
		orphan.Run = func(ctx context.Context, args []byte) error { runs.Add(1); return nil }
		rt.Register(orphan)
		waitState(t, rt, id, StateSucceeded, 5*time.Second)

		bad := &TaskDef{Name: "changed", Policy: fastPolicy(3), Run: func(ctx context.Context, args []byte) error {
			return Undecodable(errors.New("json: cannot unmarshal string into int"))
		}}
		rt.Register(bad)
		id2, _ := rt.Submit(ctx, Call{Task: bad, Args: []byte(`{"n":"x"}`)})
		waitFor(t, 5*time.Second, "undecodable error on the row", func() bool {
			task, _ := rt.Inspector().Get(ctx, id2)
			return strings.Contains(task.ErrorMsg, "arguments do not decode")
		})
		task, _ = rt.Inspector().Get(ctx, id2)
		if task.State.Terminal() || task.ExecuteTimes != 0 {
			t.Fatalf("undecodable task: state %s execute_times %d", task.State, task.ExecuteTimes)
		}
	})
}

func TestScheduledFirstDelay(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfig(dsn))
		ran := make(chan time.Time, 1)
		def := &TaskDef{Name: "later", Mode: Scheduled, Delay: 300 * time.Millisecond, Policy: fastPolicy(1),
			Run: func(ctx context.Context, args []byte) error { ran <- time.Now(); return nil }}
		rt.Register(def)
		start := time.Now()
		rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
		select {
		case at := <-ran:
			// Due times are on the database's clock (clock.go), read to
			// within half a round trip; a held scheduled call starts at
			// its due time on it: allow the reading's error.
			if el := at.Sub(start); el < 300*time.Millisecond-2*time.Millisecond {
				t.Fatalf("ran after %s, before its first delay", el)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("scheduled task never ran")
		}
	})
}

func TestUniqueKey(t *testing.T) {
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfig(dsn))
		def := &TaskDef{Name: "once", Mode: Scheduled, Delay: time.Hour}
		id1, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`), UniqueKey: "order-1"})
		if err != nil {
			t.Fatal(err)
		}
		id2, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`), UniqueKey: "order-1"})
		if !errors.Is(err, ErrDuplicate) || id2 != id1 {
			t.Fatalf("duplicate submit: id %d err %v, want id %d ErrDuplicate", id2, err, id1)
		}
	})
}

func TestStartWithoutMigrations(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig(dsn)
		cfg.AutoMigrate = false
		_, err := Start(context.Background(), cfg)
		var se *SchemaError
		if !errors.As(err, &se) {
			t.Fatalf("Start without schema: %v, want *SchemaError", err)
		}
		for _, want := range []string{"000001_argo_task.up.sql", "argoctl migrate", "AutoMigrate"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not mention %q", err, want)
			}
		}
	})
}

// A database a DBA migrated to version 1 only: Start names the next file,
// and Migrate applies just that one, keeping the rows.
func TestStartOnOldSchema(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		db, dialect, err := OpenDB(dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		ctx := context.Background()
		body, err := argosql.FS.ReadFile(dialect + "/000001_argo_task.up.sql")
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range storage.SplitStatements(string(body)) {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO argo_task (task_id, execute_time, task_parameter, error_msg, fallback_error_msg, discard_reason, gmt_create, gmt_modified) VALUES ('old', 1, '{}', '', '', '', 1, 1)"); err != nil {
			t.Fatal(err)
		}
		cfg := testConfig(dsn)
		cfg.AutoMigrate = false
		_, err = Start(ctx, cfg)
		var se *SchemaError
		if !errors.As(err, &se) || se.Migration != "000002_attempt_on_task.up.sql" || !strings.Contains(err.Error(), "sql/"+dialect+"/000002_attempt_on_task.up.sql") {
			t.Fatalf("Start on a version-1 schema: %v, want a SchemaError naming 000002", err)
		}
		applied, err := Migrate(ctx, db, dialect)
		if err != nil {
			t.Fatal(err)
		}
		// 000001 is not recorded (applied by hand), so it runs again: a no-op.
		// (Later migrations follow.)
		if want := []string{dialect + "/000001_argo_task.up.sql", dialect + "/000002_attempt_on_task.up.sql"}; len(applied) < 2 || !slices.Equal(applied[:2], want) {
			t.Fatalf("applied %v, want %v", applied, want)
		}
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM argo_task WHERE task_id = 'old' AND attempt_started_at = 0 AND attempt_worker = ''").Scan(&n); err != nil || n != 1 {
			t.Fatalf("old row after migrating: %d rows, %v", n, err)
		}
		// Two processes migrating at once: the second finds the columns added.
		if _, err := db.ExecContext(ctx, "DELETE FROM argo_schema_migrations WHERE version = 2"); err != nil {
			t.Fatal(err)
		}
		if applied, err := Migrate(ctx, db, dialect); err != nil || len(applied) != 1 {
			t.Fatalf("re-applying 000002 over its columns: %v, %v", applied, err)
		}
		rt, err := Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		rt.Stop(ctx)
	})
}

func TestBadDSN(t *testing.T) {
	for _, dsn := range []string{"postgres://x", "sqlite:", "mysql:not a dsn", "mysql:root@tcp(127.0.0.1:1)/"} {
		_, err := Start(context.Background(), Config{DSN: dsn, Logger: quietLogger()})
		if err == nil || !strings.Contains(err.Error(), "DSN") {
			t.Errorf("Start(%q) = %v, want a DSN error", dsn, err)
		}
	}
	if _, err := Start(context.Background(), Config{DSN: "mysql:root:secret@tcp(127.0.0.1:1)/x", Logger: quietLogger()}); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("unreachable MySQL: %v (want an error without the password)", err)
	}
}
