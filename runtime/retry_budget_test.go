package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A downstream that always fails, called by 30 tasks on two instances that
// retry every 20 ms: with a retry budget of 20% per 10 minutes (and the
// default minimum of one retry a window), the cluster starts the 30 first
// attempts and then exactly 0.2 × 30 + 1 = 7 retries, however long the
// downstream keeps failing; the retries over the budget wait, their
// attempts unused (every task still retrying, none exhausted), and the
// group's shared counters hold 30 and 7.
func TestFlowRetryBudgetBoundsRetries(t *testing.T) {
	forEachFlowBackend(t, func(t *testing.T, dsn string) {
		const tasks, share = 30, 0.2
		const budget = tasks*share + DefaultRetryBudgetMinRetries
		var calls atomic.Int64
		def := &TaskDef{Name: "flow.budget.failing",
			Policy: RetryPolicy{MaxAttempts: 1000, Backoff: BackoffFixed, Initial: 20 * time.Millisecond, Jitter: Jitter{Kind: JitterNone}},
			Flow:   &FlowControl{Group: "struggling", RetryBudget: &RetryBudget{Share: share, Window: 10 * time.Minute}},
			Run: func(ctx context.Context, _ []byte) error {
				calls.Add(1)
				return errors.New("downstream overloaded")
			}}
		rts := startInstances(t, dsn, 2, def)
		submitN(t, rts, def, tasks)
		// Every first attempt and every retry the budget admits reaches the
		// downstream (waited for, with a deadline: under load an admitted
		// retry may take a while to run).
		waitFor(t, 60*time.Second, fmt.Sprintf("the %d first attempts and the %d retries the budget admits", tasks, int(budget)),
			func() bool { return calls.Load() >= tasks+budget })
		// The downstream keeps failing for another second (the scenario, not
		// a synchronisation): without the budget, each task would retry
		// about 50 times in it.
		time.Sleep(time.Second)
		if got := calls.Load(); got != tasks+budget {
			t.Fatalf("%d calls reached the failing downstream: %d first attempts and %d retries, budget %d retries", got, tasks, got-tasks, int(budget))
		}
		var waiting, started int
		db := dbx(rts[0].store)
		if err := db.Get(&waiting, "SELECT COUNT(*) FROM argo_task WHERE task_id = ? AND task_status IN (?, ?)", def.Name, StatePending, StateRetrying); err != nil {
			t.Fatal(err)
		}
		if err := db.Get(&started, "SELECT COALESCE(SUM(execute_times), 0) FROM argo_task WHERE task_id = ?", def.Name); err != nil {
			t.Fatal(err)
		}
		if waiting+countRunning(t, rts[0], def.Name) != tasks || started != tasks+budget {
			t.Fatalf("%d of %d tasks waiting or running, %d attempts used; want all, and %d attempts", waiting, tasks, started, int(tasks+budget))
		}
		// The group's shared counters: each attempt counted exactly once,
		// across both instances.
		var firsts, retries int
		if err := db.QueryRow("SELECT budget_firsts, budget_retries FROM argo_flow WHERE group_name = ?", "struggling").Scan(&firsts, &retries); err != nil {
			t.Fatal(err)
		}
		if firsts != tasks || retries != budget {
			t.Fatalf("the group's budget counted %d first attempts and %d retries, want %d and %d", firsts, retries, tasks, int(budget))
		}
	})
}

// countRunning counts name's tasks in an attempt now.
func countRunning(t *testing.T, rt *Runtime, name string) int {
	t.Helper()
	n := 0
	if err := dbx(rt.store).Get(&n, "SELECT COUNT(*) FROM argo_task WHERE task_id = ? AND task_status = ?", name, StateRunning); err != nil {
		t.Fatal(err)
	}
	return n
}

// A retry budget that is not a share above 0 and at most 1, or has a
// negative window or minimum, is refused with what to give instead.
func TestRetryBudgetValidation(t *testing.T) {
	for _, tc := range []struct {
		budget RetryBudget
		want   string
	}{
		{RetryBudget{Share: 0}, "share 0 is not above 0 and at most 1"},
		{RetryBudget{Share: 1.5}, "share 1.5 is not above 0"},
		{RetryBudget{Share: 0.2, Window: -time.Second}, "negative window"},
		{RetryBudget{Share: 0.2, Window: time.Microsecond}, "shorter than a millisecond"},
		{RetryBudget{Share: 0.2, MinRetries: -1}, "negative MinRetries"},
	} {
		err := (&FlowControl{RetryBudget: &tc.budget}).validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.budget, err, tc.want)
		}
	}
	if err := (&FlowControl{RetryBudget: &RetryBudget{Share: 1}}).validate(); err != nil {
		t.Errorf("a share of 1 refused: %v", err)
	}
}
