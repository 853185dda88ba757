package console_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/argo-retry/argo/internal/testbrowser"
	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/internal/testwait"
	"github.com/argo-retry/argo/runtime"
)

// TestConsoleProgressInBrowser: a task whose attempt 1 reported 40% and
// failed shows that progress on its page (the bar, the text with the
// attempt, the timeline's "reached 40%") and in the task list; when its
// attempt 2 ends at 80% the page shows it without a reload. SQLite and
// MariaDB.
func TestConsoleProgressInBrowser(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			e := newE2E(t, b.DSN)
			e.screenshots = b.Name == "sqlite"
			release := make(chan struct{})
			var calls atomic.Int32
			def := &runtime.TaskDef{Name: "export.Build", Policy: fixed(2), Run: func(ctx context.Context, _ []byte) error {
				if calls.Add(1) == 1 {
					if err := runtime.ReportProgress(ctx, 0.4, "page 40 of 100"); err != nil {
						return err
					}
					return errors.New("export service: 502")
				}
				if err := runtime.ReportProgress(ctx, 0.8, "page 80 of 100"); err != nil {
					return err
				}
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
				return nil
			}}
			if err := e.rt.Register(def); err != nil {
				t.Fatal(err)
			}
			id, err := e.rt.Submit(context.Background(), runtime.Call{Task: def, Args: []byte(`{"report":"Q3"}`)})
			if err != nil {
				t.Fatal(err)
			}
			defer close(release)
			waitAttempts(t, e, id, 2)
			e.waitState(id, runtime.StateRunning)

			tab := e.as("alice")
			tab.Navigate(e.base + "tasks?name=export.Build")
			if got := tab.Text("td.state .progress"); got != "40%" {
				t.Errorf("the list's progress = %q; want 40%%", got)
			}
			tab.Navigate(e.taskURL(id))
			if got := tab.Text("#task-progress"); !strings.HasPrefix(got, "40% page 40 of 100 (attempt 1, reported ") {
				t.Errorf("#task-progress = %q; want attempt 1's 40%% page 40 of 100", got)
			}
			if v := testbrowser.Eval[float64](tab, `document.querySelector("#task-progress-bar").value`); v != 0.4 {
				t.Errorf("the progress bar is at %v; want 0.4", v)
			}
			if got := tab.Text("#attempts .progress"); got != "40% page 40 of 100" {
				t.Errorf("the timeline's progress of attempt 1 = %q; want 40%% page 40 of 100", got)
			}
			e.screenshot(tab, "console-task-progress.png")

			testbrowser.Eval[bool](tab, `window.__sameDocument = true`)
			release <- struct{}{}
			e.waitState(id, runtime.StateSucceeded)
			tab.WaitUntil("the task page to show attempt 2's progress", refreshTimeout,
				`document.querySelector("#task-progress").textContent.startsWith("80% page 80 of 100 (attempt 2") &&
				 document.querySelector("#task-progress-bar").value === 0.8 &&
				 document.querySelectorAll("#attempts .progress").length === 2`)
			if !testbrowser.Eval[bool](tab, `window.__sameDocument === true`) {
				t.Errorf("the task page was reloaded; want it refreshed in place")
			}
		})
	}
}

// waitAttempts waits until task id has reached attempt n.
func waitAttempts(t *testing.T, e *e2e, id int64, n int) {
	t.Helper()
	testwait.For(t, stateTimeout, fmt.Sprintf("task %d to reach attempt %d", id, n), func() bool {
		task, err := e.in.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return task.ExecuteTimes >= n
	})
}
