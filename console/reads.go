package console

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/argo-retry/argo/runtime"
)

// The console's reads of the task table, in one place: the list's filter,
// its page and its bounded count, and the overview.

// filterOf resolves q into the runtime.Filter it selects (no paging).
func filterOf(ctx context.Context, in *runtime.Inspector, q taskQuery) (runtime.Filter, error) {
	f := q.baseFilter()
	if q.Name != "" {
		names, err := in.TaskNames(ctx)
		if err != nil {
			return f, err
		}
		for _, n := range names {
			if strings.Contains(n, q.Name) {
				f.Names = append(f.Names, n)
			}
		}
		if len(f.Names) == 0 {
			f.Names = []string{q.Name} // no task name contains it: match nothing
		}
	}
	if q.Key != "" {
		return f, badRequestf("filter key: this version of argo cannot filter by unique key yet")
	}
	return f, nil
}

// scanPage is how many rows one step of listPage's scan reads.
const scanPage = 500

// listPage returns up to limit tasks f selects with ids below before (0:
// from the newest), newest first.
func listPage(ctx context.Context, in *runtime.Inspector, f runtime.Filter, before int64, limit int) ([]*runtime.Task, error) {
	if before == 0 {
		f.Limit = limit
		return in.List(ctx, f)
	}
	var out []*runtime.Task
	f.Limit = scanPage
	for f.Offset = 0; f.Offset < 40*scanPage; f.Offset += scanPage {
		rows, err := in.List(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, t := range rows {
			if t.ID < before {
				out = append(out, t)
				if len(out) == limit {
					return out, nil
				}
			}
		}
		if len(rows) < scanPage {
			break
		}
	}
	return out, nil
}

// countUpTo counts the tasks f selects, up to max (more: there are more).
func countUpTo(ctx context.Context, in *runtime.Inspector, f runtime.Filter, max int) (n int, more bool, err error) {
	n, err = in.Count(ctx, f)
	if n > max {
		return max, true, err
	}
	return n, false, err
}

// overviewData is what the overview shows, and what
// api/overview.json answers.
type overviewData struct {
	At time.Time `json:"at"`
	// States are the columns of Counts: the states any row has tasks in.
	States []string   `json:"states"`
	Counts []countRow `json:"counts"`
	// Totals per state, in the order of States.
	Totals      []int `json:"totals"`
	DeadLetters int   `json:"dead_letters"`
	// The charts' series: Time in Unix seconds, one value per bucket.
	Outcomes outcomeSeries  `json:"outcomes"`
	Lateness latenessSeries `json:"lateness"`

	Instances  []instanceRow `json:"instances"`
	Unrunnable []string      `json:"unrunnable_names"`
	Breakers   []breakerRow  `json:"breakers"`
}

// countRow is the counts of one task name and tenant, in the order of
// overviewData.States.
type countRow struct {
	Name   string `json:"name"`
	Tenant string `json:"tenant"`
	Counts []int  `json:"counts"`
	Total  int    `json:"total"`
}

type outcomeSeries struct {
	Time      []int64 `json:"time"`
	Succeeded []int   `json:"succeeded"`
	Failed    []int   `json:"failed"`
	Retried   []int   `json:"retried"`
	Dead      []int   `json:"dead"`
}

type latenessSeries struct {
	Time []int64   `json:"time"`
	P50  []float64 `json:"p50_ms"`
	P95  []float64 `json:"p95_ms"`
}

type instanceRow struct {
	ID        string    `json:"id"`
	Shards    string    `json:"shards"`
	Heartbeat time.Time `json:"heartbeat"`
	Held      int       `json:"held_retries"`
}

type breakerRow struct {
	Group   string    `json:"group"`
	Members []string  `json:"members"`
	Breaker string    `json:"breaker"`
	Until   time.Time `json:"until,omitzero"`
	OK      int       `json:"window_ok"`
	Failed  int       `json:"window_failed"`
}

// readOverview reads the overview over the window before now.
func readOverview(ctx context.Context, in *runtime.Inspector, now time.Time, window, bucket time.Duration) (*overviewData, error) {
	st, err := in.Stats(ctx, window)
	if err != nil {
		return nil, err
	}
	d := &overviewData{At: now, Instances: []instanceRow{}, Unrunnable: []string{}, Breakers: []breakerRow{}, Counts: []countRow{}}
	type nameTenant struct{ name, tenant string }
	cells := map[nameTenant]map[runtime.State]int{}
	seen := map[runtime.State]bool{}
	for _, c := range st.ByName {
		k := nameTenant{c.Name, ""}
		if cells[k] == nil {
			cells[k] = map[runtime.State]int{}
		}
		cells[k][c.State] += c.N
		seen[c.State] = true
	}
	d.fillCounts(cells2rows(cells, func(k nameTenant) (string, string) { return k.name, k.tenant }), seen)
	if d.DeadLetters, err = in.CountDeadLetters(ctx); err != nil {
		return nil, err
	}
	d.Outcomes, d.Lateness = emptySeries(now, window, bucket)
	groups, err := in.FlowGroups(ctx)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		d.Breakers = append(d.Breakers, breakerRow{Group: g.Group, Members: g.Members, Breaker: g.Breaker, Until: g.Until, OK: g.WindowOK, Failed: g.WindowFailed})
	}
	return d, nil
}

// cellsRow is one name and tenant's counts by state.
type cellsRow struct {
	name, tenant string
	byState      map[runtime.State]int
}

func cells2rows[K comparable](cells map[K]map[runtime.State]int, key func(K) (string, string)) []cellsRow {
	var rows []cellsRow
	for k, m := range cells {
		n, t := key(k)
		rows = append(rows, cellsRow{n, t, m})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].name != rows[j].name {
			return rows[i].name < rows[j].name
		}
		return rows[i].tenant < rows[j].tenant
	})
	return rows
}

// fillCounts lays rows out as the counts table: a column per state seen,
// in state order.
func (d *overviewData) fillCounts(rows []cellsRow, seen map[runtime.State]bool) {
	var states []runtime.State
	for _, s := range runtime.AllStates {
		if seen[s] {
			states = append(states, s)
			d.States = append(d.States, s.String())
		}
	}
	if d.States == nil {
		d.States = []string{}
	}
	d.Totals = make([]int, len(states))
	for _, r := range rows {
		cr := countRow{Name: r.name, Tenant: r.tenant, Counts: make([]int, len(states))}
		for i, s := range states {
			cr.Counts[i] = r.byState[s]
			cr.Total += r.byState[s]
			d.Totals[i] += r.byState[s]
		}
		d.Counts = append(d.Counts, cr)
	}
}

// emptySeries are charts of zeros over the window, one point per bucket.
func emptySeries(now time.Time, window, bucket time.Duration) (outcomeSeries, latenessSeries) {
	var o outcomeSeries
	var l latenessSeries
	start := now.Add(-window).Truncate(bucket)
	for t := start; !t.After(now); t = t.Add(bucket) {
		o.Time = append(o.Time, t.Unix())
		o.Succeeded = append(o.Succeeded, 0)
		o.Failed = append(o.Failed, 0)
		o.Retried = append(o.Retried, 0)
		o.Dead = append(o.Dead, 0)
		l.Time = append(l.Time, t.Unix())
		l.P50 = append(l.P50, 0)
		l.P95 = append(l.P95, 0)
	}
	return o, l
}
