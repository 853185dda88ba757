package runtime

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"testing"
	"time"
)

// The rate limit's window: 2 s by default, so the test stays short; the
// issue's figure is over 60 s windows: go test -run
// TestFlowRateWindowsAcrossInstances -flow.ratewindow 60s ./runtime/ (about
// three minutes: a run of 1.25 windows on each backend).
var flowRateWindow = flag.Duration("flow.ratewindow", 2*time.Second,
	"TestFlowRateWindowsAcrossInstances: the window over which the starts are counted (the run lasts 4 windows up to 10 s, else 1.25)")

// Three instances sharing the database start a rate-limited group's
// attempts (30/s, burst 10) from a backlog larger than the run: counted on
// the admission times the database recorded (each attempt's claim time),
// every window of the flag's length (2 s by default) holds at most
// burst + rate × window starts across the cluster (a quarter of a second
// of slack: a claim's time, which its starts are stamped with, is read
// before it waits for the group's row, so a claim that waited stamps its
// starts a little before the tokens it spent came in), the run as a whole
// keeps close to the rate, and every task used exactly one attempt (the
// tasks over the limit waited without using any).
func TestFlowRateWindowsAcrossInstances(t *testing.T) {
	window := *flowRateWindow
	if window < 500*time.Millisecond {
		t.Fatalf("-flow.ratewindow %s is too short to measure a rate of 30/s; give 500ms or more", window)
	}
	span := 4 * window
	if span > 10*time.Second {
		span = window + window/4
	}
	forEachFlowBackend(t, func(t *testing.T, dsn string) {
		const rate, burst = 30.0, 10
		tasks := burst + int(rate*span.Seconds())
		// One definition per instance (same name and group), so that the
		// calls each instance ran can be told apart.
		var mu sync.Mutex
		callsBy := map[int]int{}
		rts := make([]*Runtime, 3)
		var def *TaskDef
		for i := range rts {
			def = &TaskDef{Name: "flow.rate.window", Policy: fastPolicy(3), Flow: &FlowControl{Group: "partner-api", Rate: rate, Burst: burst},
				Run: func(ctx context.Context, _ []byte) error {
					mu.Lock()
					callsBy[i]++
					mu.Unlock()
					return nil
				}}
			cfg := testConfig(instanceDSN(dsn, i))
			cfg.InstanceID = fmt.Sprintf("rate-%d", i)
			cfg.Workers = 8
			cfg.LeaseDuration = 20 * time.Second
			rts[i] = startRuntime(t, cfg)
			if err := rts[i].Register(def); err != nil {
				t.Fatal(err)
			}
		}
		// The backlog is submitted due later, then falls due at once (a
		// submit is slower than the rate on SQLite under -race: submitted
		// due now, the submits and not the limit would pace the starts).
		later := time.Now().Add(time.Hour)
		ids := make([]int64, tasks)
		var wg sync.WaitGroup
		errs := make(chan error, tasks)
		for i := range tasks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id, err := rts[i%len(rts)].Submit(context.Background(), Call{Task: def, Args: []byte(`{}`), RunAt: later})
				ids[i] = id
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("submit: %v", err)
			}
		}
		if _, err := dbx(rts[0].store).Exec("UPDATE argo_task SET execute_time = ? WHERE task_id = ?", toMillis(time.Now()), def.Name); err != nil {
			t.Fatal(err)
		}
		waitAllSucceeded(t, rts[0], def.Name, ids, 2*span+60*time.Second)
		var admitted []Millis
		if err := dbx(rts[0].store).Select(&admitted, "SELECT attempt_started_at FROM argo_task WHERE task_id = ? ORDER BY attempt_started_at", def.Name); err != nil {
			t.Fatal(err)
		}
		var attempts int
		if err := dbx(rts[0].store).Get(&attempts, "SELECT COALESCE(SUM(execute_times), 0) FROM argo_task WHERE task_id = ?", def.Name); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		calls := 0
		for _, n := range callsBy {
			calls += n
		}
		if len(admitted) != tasks || admitted[0] == 0 || attempts != tasks || calls != tasks {
			t.Fatalf("%d tasks, %d admission times (first %d), %d attempts, %d calls: want one attempt and one call per task", tasks, len(admitted), admitted[0], attempts, calls)
		}
		w := Millis(window.Milliseconds())
		worst, at := 0, 0
		for i, s := range admitted {
			n := 0
			for _, o := range admitted[i:] {
				if o-s >= w {
					break
				}
				n++
			}
			if n > worst {
				worst, at = n, i
			}
		}
		took := time.Duration(admitted[len(admitted)-1]-admitted[0]) * time.Millisecond
		achieved := float64(tasks-burst) / took.Seconds()
		limit := burst + int(rate*(window.Seconds()+0.25))
		t.Logf("%d starts on 3 instances (%v calls each) in %s: %.1f/s after the burst; at most %d in any %s window (from %s into the run), bound %d = burst %d + %v/s × %s (+0.25 s of slack)",
			tasks, []int{callsBy[0], callsBy[1], callsBy[2]}, took.Round(time.Millisecond), achieved, worst, window, (time.Duration(admitted[at]-admitted[0]) * time.Millisecond).Round(time.Millisecond),
			burst+int(rate*window.Seconds()), burst, rate, window)
		if worst > limit {
			t.Fatalf("%d starts within one %s window across the cluster, limit %d (rate %v/s, burst %d)", worst, window, limit, rate, burst)
		}
		// Over the run, the backlog starts at the rate, not far below it (a
		// loaded machine may lag: half the rate is the floor).
		if achieved > rate*1.05 || achieved < rate/2 {
			t.Fatalf("the backlog started at %.1f/s, want close to %v/s", achieved, rate)
		}
		if len(callsBy) < 2 {
			t.Fatalf("only one instance ran the group's tasks (%v): the test is about the cluster's limit", callsBy)
		}
	})
}
