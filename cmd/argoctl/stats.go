package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/argo-retry/argo/runtime"
)

func cmdStats(e *env, args []string) error {
	fs := newFlagSet("stats")
	window := fs.Duration("window", time.Hour, "window of the retry and dead rates")
	tenant := fs.String("tenant", "", "counts per state of this tenant's tasks only")
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("stats takes no arguments, got %q", pos[0])
	}
	if *window <= 0 {
		return usagef("stats: -window must be positive")
	}
	if *tenant != "" {
		return withDB(e, func(ctx context.Context, in *runtime.Inspector) error {
			return tenantStats(ctx, e, in, *tenant)
		})
	}
	return withDB(e, func(ctx context.Context, in *runtime.Inspector) error {
		st, err := in.Stats(ctx, *window)
		if err != nil {
			return err
		}
		if e.json() {
			return writeJSON(e.stdout, statsJSON(st))
		}
		writeStats(e, st)
		return nil
	})
}

type dueJSON struct {
	ID         int64   `json:"id"`
	Task       string  `json:"task"`
	State      string  `json:"state"`
	Due        *string `json:"due"`
	Lag        string  `json:"lag"`
	LagSeconds float64 `json:"lag_seconds"`
}

func statsJSON(st *runtime.Stats) any {
	byState := map[string]int{}
	for _, s := range runtime.AllStates {
		byState[s.String()] = st.ByState[s]
	}
	byTask := map[string]map[string]int{}
	for _, c := range st.ByName {
		if byTask[c.Name] == nil {
			byTask[c.Name] = map[string]int{}
		}
		byTask[c.Name][c.State.String()] = c.N
	}
	var due *dueJSON
	if d := st.OldestDue; d != nil {
		due = &dueJSON{ID: d.ID, Task: d.Name, State: d.State.String(), Due: jsonTime(runtime.Millis(d.Due.UnixMilli())), Lag: fmtDuration(d.Lag), LagSeconds: d.Lag.Seconds()}
	}
	return struct {
		At             string                    `json:"at"`
		Window         string                    `json:"window"`
		WindowSeconds  float64                   `json:"window_seconds"`
		Total          int                       `json:"total"`
		ByState        map[string]int            `json:"by_state"`
		ByTask         map[string]map[string]int `json:"by_task"`
		OldestDue      *dueJSON                  `json:"oldest_due"`
		Attempts       int                       `json:"attempts"`
		FailedAttempts int                       `json:"failed_attempts"`
		RetryRate      float64                   `json:"retry_rate"`
		Finished       int                       `json:"finished"`
		Dead           int                       `json:"dead"`
		DeadRate       float64                   `json:"dead_rate"`
	}{fmtTime(st.At), fmtWindow(st.Window), st.Window.Seconds(), st.Total, byState, byTask, due,
		st.Attempts, st.FailedAttempts, st.RetryRate, st.Finished, st.Dead, st.DeadRate}
}

func writeStats(e *env, st *runtime.Stats) {
	w := newTable(e.stdout)
	row(w, "STATE", "TASKS")
	for _, s := range runtime.AllStates {
		row(w, s, st.ByState[s])
	}
	row(w, "total", st.Total)
	w.Flush()

	if len(st.ByName) > 0 {
		// One column per state that has tasks, one row per task name.
		var cols []runtime.State
		for _, s := range runtime.AllStates {
			if st.ByState[s] > 0 {
				cols = append(cols, s)
			}
		}
		e.stdout.Write([]byte("\n"))
		w = newTable(e.stdout)
		head := []any{"TASK"}
		for _, s := range cols {
			head = append(head, strings.ToUpper(s.String()))
		}
		row(w, append(head, "TOTAL")...)
		counts := map[string]map[runtime.State]int{}
		var names []string
		for _, c := range st.ByName {
			if counts[c.Name] == nil {
				counts[c.Name] = map[runtime.State]int{}
				names = append(names, c.Name)
			}
			counts[c.Name][c.State] = c.N
		}
		for _, name := range names {
			cells, total := []any{name}, 0
			for _, s := range cols {
				cells = append(cells, counts[name][s])
				total += counts[name][s]
			}
			row(w, append(cells, total)...)
		}
		w.Flush()
	}

	e.stdout.Write([]byte("\n"))
	w = newTable(e.stdout)
	row(w, "at", fmtTime(st.At))
	if d := st.OldestDue; d != nil {
		row(w, "oldest due", "task "+strconv.FormatInt(d.ID, 10)+" ("+d.Name+", "+d.State.String()+") due "+fmtTime(d.Due)+", lag "+fmtDuration(d.Lag))
	} else {
		row(w, "oldest due", "none (no pending or retrying task is due)")
	}
	win := "last " + fmtWindow(st.Window)
	row(w, "attempts", strconv.Itoa(st.Attempts)+" in the "+win+", "+strconv.Itoa(st.FailedAttempts)+" failed")
	row(w, "retry rate", fmtPercent(st.RetryRate)+" of attempts failed")
	row(w, "finished", strconv.Itoa(st.Finished)+" "+plural(st.Finished, "task")+" in the "+win+", "+strconv.Itoa(st.Dead)+" dead")
	row(w, "dead rate", fmtPercent(st.DeadRate)+" of finished tasks")
	w.Flush()
}
