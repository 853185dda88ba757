package e2e

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testwait"
	"github.com/argo-retry/argo/runtime"
)

// TestE2E runs the generated wrappers against a runtime on SQLite. The
// subtests share one runtime and run in order.
func TestE2E(t *testing.T) {
	ctx := context.Background()
	// Start from scratch when run again in the same process (-count).
	argoRuntime.Store(nil)
	seen = newJournal()

	t.Run("unbound", func(t *testing.T) {
		err := FlakyDurable(ctx, "nobody")
		if !errors.Is(err, runtime.ErrNotPersisted) || !strings.Contains(err.Error(), "e2e.ArgoRegister") {
			t.Fatalf("wrapper before ArgoRegister: got %v, want ErrNotPersisted naming e2e.ArgoRegister", err)
		}
	})

	rt, err := runtime.Start(ctx, runtime.Config{
		DSN:              "sqlite:" + filepath.Join(t.TempDir(), "argo.db"),
		AutoMigrate:      true,
		PollInterval:     20 * time.Millisecond,
		UnknownTaskDelay: 50 * time.Millisecond,
		RescueInterval:   50 * time.Millisecond, // the maintenance pass flags tasks without a handler
		Logger:           slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(ctx)
	if err := ArgoRegister(rt); err != nil {
		t.Fatal(err)
	}
	in := rt.Inspector()

	t.Run("fails twice then succeeds", func(t *testing.T) {
		if err := FlakyDurable(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		task := waitState(t, in, argoTaskFlaky.Name, runtime.StateSucceeded)
		if task.ExecuteTimes != 3 {
			t.Errorf("execute_times = %d, want 3", task.ExecuteTimes)
		}
		if n := flakyCalls("a"); n != 3 {
			t.Errorf("Flaky ran %d times, want 3", n)
		}
		atts, err := in.Attempts(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(atts) != 3 || atts[0].Outcome != runtime.OutcomeFailed || atts[2].Outcome != runtime.OutcomeSucceeded {
			t.Errorf("attempts = %+v, want failed, failed, succeeded", atts)
		}
		// unique-by=key: a second call with the same key is not stored again.
		if err := FlakyDurable(ctx, "a"); !errors.Is(err, runtime.ErrDuplicate) {
			t.Errorf("second call with the same unique key: %v, want ErrDuplicate", err)
		}
	})

	t.Run("fallback and alert after exhaustion", func(t *testing.T) {
		note := "fragile"
		order := Order{ID: 42, Lines: []string{"x", "y"}, Attrs: map[string]string{"k": "v"}, Note: &note}
		if err := DoomedDurable(ctx, order, "red", "blue"); err != nil {
			t.Fatal(err)
		}
		task := waitState(t, in, argoTaskDoomed.Name, runtime.StateRecovered)
		if task.ExecuteTimes != 2 {
			t.Errorf("execute_times = %d, want 2 (retries=1)", task.ExecuteTimes)
		}
		var calls []fallbackCall
		seen.do(func(j *journal) { calls = append(calls, j.fallbacks...) })
		if len(calls) != 1 {
			t.Fatalf("fallback ran %d times, want 1", len(calls))
		}
		if !reflect.DeepEqual(calls[0].order, order) || !reflect.DeepEqual(calls[0].tags, []string{"red", "blue"}) {
			t.Errorf("fallback got %+v %v, want the original arguments %+v [red blue]", calls[0].order, calls[0].tags, order)
		}
		if calls[0].cause == nil || !strings.Contains(calls[0].cause.Error(), "boom") {
			t.Errorf("FallbackCause = %v, want the last attempt's error", calls[0].cause)
		}
		alerts := eventually(t, func() []runtime.AlertEvent {
			var a []runtime.AlertEvent
			seen.do(func(j *journal) { a = append(a, j.alerts...) })
			return a
		})
		if ev := alerts[0]; ev.TaskName != argoTaskDoomed.Name || !ev.Exhausted || ev.ExecuteTimes != 2 || len(alerts) != 1 {
			t.Errorf("alerts = %+v, want one for the exhausted second attempt", alerts)
		}
	})

	t.Run("receiver bound late", func(t *testing.T) {
		note := "hello"
		var s *Store
		// Submitted before its receiver is bound: stored, not run (no handler).
		if err := s.SaveDurable(ctx, 7, &note); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if got := saved(); len(got) != 0 {
			t.Fatalf("ran before its receiver was bound: %v", got)
		}
		var waiting *runtime.Task
		testwait.Until(5*time.Second, func() bool {
			waiting = waitState(t, in, argoTaskStoreSave.Name, runtime.StatePending)
			return strings.Contains(waiting.ErrorMsg, "handler")
		})
		if !strings.Contains(waiting.ErrorMsg, "handler") {
			t.Errorf("a task whose receiver is not bound waits with error_msg %q, want it to say no handler is registered", waiting.ErrorMsg)
		}
		if err := ArgoRegisterStore(rt, &Store{Prefix: "s-"}); err != nil {
			t.Fatal(err)
		}
		waitState(t, in, argoTaskStoreSave.Name, runtime.StateSucceeded)
		if got := saved(); !reflect.DeepEqual(got, []string{"s-7:hello"}) {
			t.Errorf("saved = %v, want [s-7:hello]", got)
		}
	})

	t.Run("sync returns the first attempt's error", func(t *testing.T) {
		err := (*Store)(nil).SaveDurable(ctx, 8, nil)
		var ae *runtime.AttemptError
		if !errors.As(err, &ae) || ae.WillRetry || !strings.Contains(err.Error(), "no note") {
			t.Fatalf("sync wrapper: got %v, want an *AttemptError with no retry left", err)
		}
		note := "ok"
		if err := (*Store)(nil).SaveDurable(ctx, 9, &note); err != nil {
			t.Fatalf("sync wrapper of a succeeding call: %v", err)
		}
		if got := saved(); got[len(got)-1] != "s-9:ok" {
			t.Errorf("saved = %v, want s-9:ok last (run in the caller's goroutine)", got)
		}
	})

	t.Run("value receiver, scheduled, no context", func(t *testing.T) {
		if err := ArgoRegisterCounter(rt, Counter{Step: 10}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := (Counter{}).AddDurable(4); err != nil {
			t.Fatal(err)
		}
		waitState(t, in, argoTaskCounterAdd.Name, runtime.StateSucceeded)
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Errorf("scheduled task ran after %v, want at least first-delay=50ms", d)
		}
		var added int
		seen.do(func(j *journal) { added = j.added })
		if added != 40 {
			t.Errorf("added = %d, want 40 (the bound receiver's Step)", added)
		}
	})

	t.Run("transactional submit", func(t *testing.T) {
		tx, err := rt.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := FlakyDurableTx(ctx, tx, "rolled-back"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		tx, err = rt.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		id, err := FlakyDurableTx(ctx, tx, "committed")
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() []bool {
			task, err := in.Get(ctx, id)
			if err == nil && task.State == runtime.StateSucceeded {
				return []bool{true}
			}
			return nil
		})
		if n := flakyCalls("rolled-back"); n != 0 {
			t.Errorf("a rolled-back call ran %d times", n)
		}
	})

	t.Run("stored arguments of another signature are undecodable", func(t *testing.T) {
		for _, args := range []string{`{}`, `{"key":"a","extra":1}`, `{"key":1}`, `not json`} {
			err := argoTaskFlaky.Run(ctx, []byte(args))
			if !runtime.IsUndecodable(err) {
				t.Errorf("Run(%s) = %v, want an Undecodable error", args, err)
			}
		}
	})
}

func flakyCalls(key string) int {
	var n int
	seen.do(func(j *journal) { n = j.flaky[key] })
	return n
}

func saved() []string {
	var s []string
	seen.do(func(j *journal) { s = append(s, j.saved...) })
	return s
}

// waitState waits for the newest task named name to reach state.
func waitState(t *testing.T, in *runtime.Inspector, name string, state runtime.State) *runtime.Task {
	t.Helper()
	var last *runtime.Task
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		tasks, err := in.List(context.Background(), runtime.Filter{Name: name, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) == 1 {
			last = tasks[0]
			if last.State == state {
				return last
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("task %s did not reach %s; last seen: %+v", name, state, last)
	return nil
}

// eventually polls f until it returns a non-empty slice (testwait.Value).
func eventually[T any](t *testing.T, f func() []T) []T {
	t.Helper()
	return testwait.Value(t, 10*time.Second, "a non-empty result", func() ([]T, bool) {
		v := f()
		return v, len(v) > 0
	})
}
