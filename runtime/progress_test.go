package runtime

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// ReportProgress outside an attempt, with a fraction that is NaN or outside
// [0, 1], or a note too long, not UTF-8 or with NUL, is refused with an
// error saying what to do, and the report is not kept; a note of exactly
// MaxProgressNote 4-byte characters is taken.
func TestReportProgressRefusesBadInput(t *testing.T) {
	if err := ReportProgress(context.Background(), 0.5, "x"); !errors.Is(err, ErrNotInAttempt) {
		t.Fatalf("outside an attempt: %v, want ErrNotInAttempt", err)
	}
	rt := &Runtime{cfg: Config{Now: time.Now}}
	ctx, box := rt.attemptProgress(context.Background(), &Task{ID: 1, ExecuteTimes: 1}, leaseKey{ID: 1, Attempt: 1})
	bad := []struct {
		fraction float64
		note     string
		says     string
	}{
		{math.NaN(), "", "between 0 and 1"},
		{-0.01, "", "between 0 and 1"},
		{1.01, "", "between 0 and 1"},
		{math.Inf(1), "", "between 0 and 1"},
		{0.5, strings.Repeat("é", MaxProgressNote+1), "shorten it"},
		{0.5, "half \xff done", "strings.ToValidUTF8"},
		{0.5, "a\x00b", "NUL"},
	}
	for _, c := range bad {
		err := ReportProgress(ctx, c.fraction, c.note)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("ReportProgress(%v, %q…): %v, want an error saying %q", c.fraction, c.note[:min(len(c.note), 8)], err, c.says)
		}
	}
	if box.seq != 0 {
		t.Fatalf("refused reports were kept: %d", box.seq)
	}
	full := strings.Repeat("😀", MaxProgressNote)
	if err := ReportProgress(ctx, 1, full); err != nil {
		t.Fatalf("a note of %d 4-byte characters: %v", MaxProgressNote, err)
	}
	if err := ReportProgress(ctx, 0, ""); err != nil {
		t.Fatalf("fraction 0, empty note: %v", err)
	}
	box.end()
	if err := ReportProgress(ctx, 0.5, ""); !errors.Is(err, ErrAttemptEnded) {
		t.Fatalf("after the function returned: %v, want ErrAttemptEnded", err)
	}
}

// progressRow is the progress columns of task id.
func progressRow(t *testing.T, rt *Runtime, id int64) *Task {
	t.Helper()
	task, err := rt.Inspector().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// A running attempt's report reaches the task row with a lease renewal
// (fraction, note, attempt); bad reports are refused and leave it; the last
// report before the attempt ends, which no renewal carried, is written with
// its outcome: on the history row of the failed attempt 1 and, for the
// succeeded attempt 2, on the task row, which Inspector.Attempts lists;
// a report after the function returned is refused. On MariaDB (strict
// mode, utf8mb4) too: a 200-character note of 4-byte characters is stored
// whole.
func TestProgressRenewedAndKeptInHistory(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		full := strings.Repeat("😀", MaxProgressNote)
		seen := make(chan struct{})
		var calls atomic.Int32
		var ended atomic.Value // the ctx of attempt 1, after it returned
		refusedCh := make(chan []error, 1)
		def := &TaskDef{Name: "progress.history", Policy: fastPolicy(3), Run: func(ctx context.Context, _ []byte) error {
			if calls.Add(1) == 1 {
				if err := ReportProgress(ctx, 0.5, full); err != nil {
					return err
				}
				var refused []error
				for _, note := range []string{strings.Repeat("x", MaxProgressNote+1), "bad \xc3", "nul\x00"} {
					refused = append(refused, ReportProgress(ctx, 0.9, note))
				}
				refusedCh <- refused
				select { // the test saw the renewal write it
				case <-seen:
				case <-ctx.Done():
					return ctx.Err()
				}
				if err := ReportProgress(ctx, 0.6, "last of attempt 1"); err != nil {
					return err
				}
				ended.Store(ctx)
				return errors.New("fails after 60%")
			}
			if err := ReportProgress(ctx, 1, "done"); err != nil {
				return err
			}
			return nil
		}}
		cfg := testConfigT(t, dsn)
		cfg.LeaseDuration = 3 * time.Second // renewals every second
		rt := startRuntime(t, cfg)
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "a renewal to write attempt 1's progress", func() bool {
			row := progressRow(t, rt, id)
			return row.ProgressAttempt == 1
		})
		row := progressRow(t, rt, id)
		if row.Progress != 0.5 || row.ProgressNote != full || row.ProgressAt == 0 || row.State != StateRunning {
			t.Fatalf("row while attempt 1 runs: %s progress %v note %d characters at %d", row.State, row.Progress, len([]rune(row.ProgressNote)), row.ProgressAt)
		}
		running, err := rt.Inspector().Attempt(context.Background(), id, 1)
		if err != nil || running.Progress != 0.5 || running.Outcome != "" {
			t.Fatalf("Inspector.Attempt of the running attempt: %+v, %v; want its progress 0.5", running, err)
		}
		for i, err := range receive(t, refusedCh, 20*time.Second, "the bad reports") {
			if err == nil {
				t.Fatalf("bad report %d was taken", i)
			}
		}
		close(seen)
		task := waitState(t, rt, id, StateSucceeded, 20*time.Second)
		if task.Progress != 1 || task.ProgressNote != "done" || task.ProgressAttempt != 2 {
			t.Fatalf("succeeded row: progress %v %q attempt %d; want 1 \"done\" attempt 2", task.Progress, task.ProgressNote, task.ProgressAttempt)
		}
		hist, err := rt.Inspector().Attempts(context.Background(), id)
		if err != nil || len(hist) != 2 {
			t.Fatalf("history %+v, %v; want 2 attempts", hist, err)
		}
		if a := hist[0]; a.Attempt != 1 || a.Outcome != OutcomeFailed || a.Progress != 0.6 || a.ProgressNote != "last of attempt 1" || a.ProgressAt == 0 || a.ProgressAt > a.FinishedAt {
			t.Fatalf("attempt 1's record: %+v; want its last report 0.6 \"last of attempt 1\", made before it ended", a)
		}
		if a := hist[1]; a.Attempt != 2 || a.Outcome != OutcomeSucceeded || a.Progress != 1 || a.ProgressNote != "done" {
			t.Fatalf("attempt 2's record: %+v; want progress 1 \"done\"", a)
		}
		if err := ReportProgress(ended.Load().(context.Context), 0.7, "late"); !errors.Is(err, ErrAttemptEnded) {
			t.Fatalf("a report after attempt 1 returned: %v, want ErrAttemptEnded", err)
		}
		if a, _ := rt.Inspector().Attempt(context.Background(), id, 1); a.Progress != 0.6 {
			t.Fatalf("the late report changed attempt 1's record: %+v", a)
		}
	})
}

// A report made while another instance takes the task (the row rescued
// and claimed again: owner and attempt changed) is carried by the next
// renewal, which finds the lease gone: it writes nothing (fenced like the
// renewal), the function is canceled with ErrLeaseLost, and the new
// holder's row keeps no progress of the old attempt.
func TestProgressAfterLeaseLostNotWritten(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		taken := make(chan struct{})
		reported := make(chan struct{})
		result := make(chan error, 1)
		var lostCtx atomic.Value
		var calls atomic.Int32
		def := &TaskDef{Name: "progress.fenced", Policy: fastPolicy(3), Run: func(ctx context.Context, _ []byte) error {
			if calls.Add(1) > 1 {
				return nil
			}
			select {
			case <-taken:
			case <-ctx.Done():
				result <- context.Cause(ctx)
				return ctx.Err()
			}
			err := ReportProgress(ctx, 0.3, "after the takeover")
			close(reported)
			if err != nil {
				result <- err
				return err
			}
			<-ctx.Done()
			lostCtx.Store(ctx)
			result <- context.Cause(ctx)
			return ctx.Err()
		}}
		cfg := testConfigT(t, dsn)
		cfg.LeaseDuration = 3 * time.Second
		rt := startRuntime(t, cfg)
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "attempt 1 to run", func() bool { return calls.Load() == 1 })
		// Another instance took the task: attempt 2 is its, leased for a while.
		if _, err := rt.store.DB().Exec("UPDATE argo_task SET lease_owner = 'thief', execute_times = execute_times + 1, lease_until = ? WHERE id = ?", nowMillis()+60_000, id); err != nil {
			t.Fatal(err)
		}
		close(taken)
		receive(t, reported, 20*time.Second, "the report")
		if err := receive(t, result, 20*time.Second, "the attempt to be canceled"); !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("attempt 1 ended with %v, want ErrLeaseLost", err)
		}
		row := progressRow(t, rt, id)
		if row.ProgressAttempt != 0 || row.Progress != 0 || row.ProgressNote != "" || row.LeaseOwner != "thief" {
			t.Fatalf("the lost attempt's report was written: owner %s progress %v %q attempt %d", row.LeaseOwner, row.Progress, row.ProgressNote, row.ProgressAttempt)
		}
		// Once the loss is known, a report says so.
		if err := ReportProgress(lostCtx.Load().(context.Context), 0.4, ""); !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("a report after the lease was lost: %v, want ErrLeaseLost", err)
		}
	})
}
