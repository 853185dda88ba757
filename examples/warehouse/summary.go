package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/argo-retry/argo/runtime"
)

// Row is the summary of one task name.
type Row struct {
	Name                                      string
	Submitted, Attempts, Succeeded, Recovered int
	Dead, Discarded, Unfinished, Alerts       int
}

// Summary is the state of this run's tasks, read from argo_task.
type Summary struct {
	Rows      []Row
	States    map[runtime.State]int
	DeadTasks []*runtime.Task
	HandSlips int
	Pages     int
}

func summarize(ctx context.Context, rt *runtime.Runtime, firstID int64, alerts *alertCounter) (*Summary, error) {
	rows, err := rt.DB().QueryContext(ctx, "SELECT id, task_id, task_status, execute_times FROM argo_task WHERE id > ? ORDER BY id", firstID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byName := map[string]*Row{}
	s := &Summary{States: map[runtime.State]int{}}
	var deadIDs []int64
	for rows.Next() {
		var id int64
		var name string
		var state runtime.State
		var attempts int
		if err := rows.Scan(&id, &name, &state, &attempts); err != nil {
			return nil, err
		}
		short := name[strings.LastIndex(name, ".")+1:]
		r := byName[short]
		if r == nil {
			r = &Row{Name: short, Alerts: alerts.get(name)}
			byName[short] = r
		}
		r.Submitted++
		r.Attempts += attempts
		s.States[state]++
		switch state {
		case runtime.StateSucceeded:
			r.Succeeded++
		case runtime.StateRecovered:
			r.Recovered++
		case runtime.StateDead:
			r.Dead++
			deadIDs = append(deadIDs, id)
		case runtime.StateDiscarded:
			r.Discarded++
		default:
			r.Unfinished++
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, r := range byName {
		s.Rows = append(s.Rows, *r)
	}
	sort.Slice(s.Rows, func(i, j int) bool { return s.Rows[i].Name < s.Rows[j].Name })
	for _, id := range deadIDs {
		t, err := rt.Inspector().Get(ctx, id)
		if err != nil {
			return nil, err
		}
		s.DeadTasks = append(s.DeadTasks, t)
	}
	return s, nil
}

// AllTerminal reports whether every task has ended.
func (s *Summary) AllTerminal() bool {
	for _, r := range s.Rows {
		if r.Unfinished > 0 {
			return false
		}
	}
	return len(s.Rows) > 0
}

// ProgressLine is one line of live progress.
func (s *Summary) ProgressLine() string {
	return fmt.Sprintf("pending %3d  running %3d  retrying %3d  succeeded %3d  recovered %3d  dead %3d",
		s.States[runtime.StatePending], s.States[runtime.StateRunning]+s.States[runtime.StateFallingBack]+s.States[runtime.StateExhausted],
		s.States[runtime.StateRetrying], s.States[runtime.StateSucceeded], s.States[runtime.StateRecovered], s.States[runtime.StateDead])
}

// Print writes the summary table.
func (s *Summary) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "task\tsubmitted\tattempts\tsucceeded\trecovered\tdead\talerts\t")
	var t Row
	for _, r := range s.Rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", r.Name, r.Submitted, r.Attempts, r.Succeeded, r.Recovered, r.Dead, r.Alerts)
		t.Submitted += r.Submitted
		t.Attempts += r.Attempts
		t.Succeeded += r.Succeeded
		t.Recovered += r.Recovered
		t.Dead += r.Dead
		t.Alerts += r.Alerts
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t%d\t%d\t\n", t.Submitted, t.Attempts, t.Succeeded, t.Recovered, t.Dead, t.Alerts)
	tw.Flush()
}

// Check verifies the numbers add up: every task terminal, and succeeded +
// recovered + dead = submitted for every task name.
func (s *Summary) Check() error {
	for _, r := range s.Rows {
		if r.Unfinished > 0 {
			return fmt.Errorf("%s: %d tasks not finished", r.Name, r.Unfinished)
		}
		if r.Succeeded+r.Recovered+r.Dead+r.Discarded != r.Submitted {
			return fmt.Errorf("%s: succeeded %d + recovered %d + dead %d != submitted %d", r.Name, r.Succeeded, r.Recovered, r.Dead, r.Submitted)
		}
		if r.Attempts < r.Submitted {
			return fmt.Errorf("%s: %d attempts for %d tasks", r.Name, r.Attempts, r.Submitted)
		}
	}
	if len(s.Rows) == 0 {
		return fmt.Errorf("no tasks")
	}
	return nil
}
