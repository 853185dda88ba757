package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// A deferral (RetryAfter) is an attempt that called the downstream: it gets
// its own attempt number and idempotency key and a history row "deferred",
// and does not use up the retry policy's attempts. A task with two attempts
// is deferred four times, fails once (its first counted attempt) and then
// succeeds (its second): the callee saw six distinct keys argo-ID-1 … -6,
// the history numbers 1–5 once each (four deferred, one failed), and the
// task succeeded at attempt 6 with two of its policy's attempts used.
func TestRetryAfterAttemptsHaveTheirOwnNumbers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		var calls atomic.Int64
		var mu sync.Mutex
		var keys []string
		var numbers []int
		def := &TaskDef{Name: "quota.numbers", Policy: fastPolicy(2), Run: func(ctx context.Context, _ []byte) error {
			_, n, _ := AttemptFrom(ctx)
			mu.Lock()
			keys = append(keys, IdempotencyKey(ctx))
			numbers = append(numbers, n)
			mu.Unlock()
			switch c := calls.Add(1); {
			case c <= 4:
				return RetryAfter(errors.New("429 quota"), 10*time.Millisecond)
			case c == 5:
				return errors.New("500 once")
			}
			return nil
		}}
		rts := startInstances(t, dsn, 1, def)
		id := submitN(t, rts, def, 1)[0]
		task := waitState(t, rts[0], id, StateSucceeded, 10*time.Second)
		mu.Lock()
		defer mu.Unlock()
		seen := map[string]bool{}
		for i, k := range keys {
			if seen[k] {
				t.Fatalf("the callee got key %s twice (keys %v, attempt numbers %v)", k, keys, numbers)
			}
			seen[k] = true
			if want := fmt.Sprintf("argo-%d-%d", id, i+1); k != want || numbers[i] != i+1 {
				t.Fatalf("call %d had key %s and attempt %d, want %s and %d (keys %v)", i+1, k, numbers[i], want, i+1, keys)
			}
		}
		if len(keys) != 6 || task.ExecuteTimes != 6 {
			t.Fatalf("%d calls, succeeded at attempt %d; want 6 and 6 (keys %v)", len(keys), task.ExecuteTimes, keys)
		}
		hist, err := rts[0].Inspector().Attempts(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range hist {
			got = append(got, fmt.Sprintf("%d:%s", a.Attempt, a.Outcome))
		}
		want := []string{"1:deferred", "2:deferred", "3:deferred", "4:deferred", "5:failed", "6:succeeded"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("history %v, want %v", got, want)
		}
	})
}

// A downstream that answers 429 forever must not grow its group's retry
// budget: a deferred first attempt is not a new first attempt. One call,
// deferred every time (10 ms), under a retry budget of 20% per 10 minutes
// (plus the default one retry a window): its first attempt is counted once,
// its deferred calls are retries, and so it reaches the downstream exactly
// twice (the first attempt and the one retry the budget admits).
func TestRetryAfterDeferralIsARetryForTheBudget(t *testing.T) {
	forEachFlowBackend(t, func(t *testing.T, dsn string) {
		var calls atomic.Int64
		def := &TaskDef{Name: "quota.budget", Policy: fastPolicy(3),
			Flow: &FlowControl{Group: "quota", RetryBudget: &RetryBudget{Share: 0.2, Window: 10 * time.Minute}},
			Run: func(ctx context.Context, _ []byte) error {
				calls.Add(1)
				return RetryAfter(errors.New("429 quota"), 10*time.Millisecond)
			}}
		rts := startInstances(t, dsn, 1, def)
		id := submitN(t, rts, def, 1)[0]
		waitFor(t, 10*time.Second, "the first attempt and the one retry the budget admits", func() bool { return calls.Load() >= 2 })
		// The downstream keeps answering 429 for another second (the
		// scenario, not a synchronisation): deferred every 10 ms, the call
		// would be made about 100 times in it without the budget.
		time.Sleep(time.Second)
		var firsts, retries int
		if err := dbx(rts[0].store).QueryRow("SELECT budget_firsts, budget_retries FROM argo_flow WHERE group_name = ?", "quota").Scan(&firsts, &retries); err != nil {
			t.Fatal(err)
		}
		if got := calls.Load(); got != 2 || firsts != 1 || retries != 1 {
			t.Fatalf("a call deferred by 429s reached the downstream %d times; the budget counted %d first attempts and %d retries; want 2, 1 and 1", got, firsts, retries)
		}
		task, err := rts[0].Inspector().Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if task.State != StateRetrying || task.ExecuteTimes != 2 {
			t.Fatalf("task %s at attempt %d, want retrying at attempt 2 (its policy's attempts unused)", task.State, task.ExecuteTimes)
		}
	})
}

// A first attempt given back at Stop (cancelled by the shutdown, its
// outcome not recorded) is not a new first attempt for its group's retry
// budget: the give-back takes it back out of the count, so that the call
// counts once when it runs again (it counted twice: each give-back of a
// first attempt earned the group room for another retry).
func TestGiveBackOfAFirstAttemptCountedOnceByTheBudget(t *testing.T) {
	forEachFlowBackend(t, func(t *testing.T, dsn string) {
		started := make(chan struct{}, 1)
		var calls atomic.Int64
		def := &TaskDef{Name: "budget.giveback", Policy: fastPolicy(3),
			Flow: &FlowControl{Group: "giveback", RetryBudget: &RetryBudget{Share: 0.2, Window: 10 * time.Minute}},
			Run: func(ctx context.Context, _ []byte) error {
				if calls.Add(1) == 1 {
					started <- struct{}{}
					<-ctx.Done() // the first call runs until Stop cancels it
					return ctx.Err()
				}
				return nil
			}}
		counts := func(rt *Runtime) (firsts, retries int) {
			t.Helper()
			if err := dbx(rt.store).QueryRow("SELECT budget_firsts, budget_retries FROM argo_flow WHERE group_name = ?", "giveback").Scan(&firsts, &retries); err != nil {
				t.Fatal(err)
			}
			return firsts, retries
		}
		cfg := testConfig(instanceDSN(dsn, 0))
		cfg.InstanceID = "giveback-a"
		cfg.ShutdownTimeout = 50 * time.Millisecond
		a := startRuntime(t, cfg)
		if err := a.Register(def); err != nil {
			t.Fatal(err)
		}
		// Reads after a's Stop go through an instance that runs nothing.
		ocfg := testConfig(instanceDSN(dsn, 2))
		ocfg.InstanceID = "giveback-observer"
		observer := startRuntime(t, ocfg)
		id := submitN(t, []*Runtime{a}, def, 1)[0]
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the first attempt did not start")
		}
		if f, r := counts(a); f != 1 || r != 0 {
			t.Fatalf("while the first attempt runs the budget counts %d first attempts and %d retries, want 1 and 0", f, r)
		}
		_ = a.Stop(context.Background())
		task, err := observer.Inspector().Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if task.State != StatePending || task.ExecuteTimes != 0 {
			t.Fatalf("after Stop the task is %s at attempt %d, want given back: pending at 0", task.State, task.ExecuteTimes)
		}
		if f, r := counts(observer); f != 0 || r != 0 {
			t.Fatalf("after the give-back the budget counts %d first attempts and %d retries, want 0 and 0", f, r)
		}
		cfg = testConfig(instanceDSN(dsn, 1))
		cfg.InstanceID = "giveback-b"
		b := startRuntime(t, cfg)
		if err := b.Register(def); err != nil {
			t.Fatal(err)
		}
		waitState(t, b, id, StateSucceeded, 10*time.Second)
		if f, r := counts(b); f != 1 || r != 0 {
			t.Fatalf("the call ran once more and the budget counts %d first attempts and %d retries, want 1 and 0", f, r)
		}
	})
}

// The alert's executeTimes counts attempts as the retry policy does: a
// task deferred three times and then failing once fires
// "executeTimes >= 2" only at its second counted attempt (history attempt
// 5), with executeTimes 2, not on its deferred attempts 2–4.
func TestRetryAfterAlertCountsAsThePolicy(t *testing.T) {
	var calls atomic.Int64
	var mu sync.Mutex
	var fired []int
	def := &TaskDef{Name: "quota.alert", Policy: fastPolicy(3), Alert: "executeTimes >= 2",
		Run: func(ctx context.Context, _ []byte) error {
			switch c := calls.Add(1); {
			case c <= 3:
				return RetryAfter(errors.New("429 quota"), 10*time.Millisecond)
			case c <= 5:
				return errors.New("500")
			}
			return nil
		},
		AlertAction: func(ctx context.Context, ev AlertEvent) error {
			mu.Lock()
			fired = append(fired, ev.ExecuteTimes)
			mu.Unlock()
			return nil
		}, AlertActionName: "page"}
	rts := startInstances(t, testdb.SQLiteDSN(t), 1, def)
	id := submitN(t, rts, def, 1)[0]
	waitState(t, rts[0], id, StateSucceeded, 10*time.Second)
	waitFor(t, 5*time.Second, "the alert of attempt 5", func() bool { mu.Lock(); defer mu.Unlock(); return len(fired) >= 1 })
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(fired) != "[2]" {
		t.Fatalf("alerts fired with executeTimes %v, want [2] (attempts 1-3 deferred, 4 and 5 failed: the policy's 1 and 2)", fired)
	}
}
