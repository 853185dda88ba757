package console

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/argo-retry/argo/runtime"
)

// The console's reads of the task table, in one place: the list's filter,
// its page and its bounded count, and the overview.

// listPage returns up to limit tasks f selects with ids below before (0:
// from the newest), newest first: a page by key, as fast deep in the table
// as at its start.
func listPage(ctx context.Context, in *runtime.Inspector, f runtime.Filter, before int64, limit int) ([]*runtime.Task, error) {
	f.BeforeID = before
	f.Limit = limit
	return in.List(ctx, f)
}

// countUpTo counts the tasks f selects, up to max (more: there are more).
func countUpTo(ctx context.Context, in *runtime.Inspector, f runtime.Filter, max int) (n int, more bool, err error) {
	return in.CountUpTo(ctx, f, max)
}

// overviewData is what the overview shows, and what
// api/overview.json answers.
type overviewData struct {
	At time.Time `json:"at"`
	// Window is the span of the charts and of the counts of the states
	// retention purges.
	Window string `json:"window"`
	// States are the columns of Counts: the states any row has tasks in.
	States []string   `json:"states"`
	Counts []countRow `json:"counts"`
	// Totals per state, in the order of States.
	Totals []int `json:"totals"`
	// DeadLetters counts the dead tasks not requeued, up to the console's
	// CountCap (DeadLettersMore: there are more).
	DeadLetters     int  `json:"dead_letters"`
	DeadLettersMore bool `json:"dead_letters_more"`
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
	// DeadGrowth is the tasks that became dead within the window and are
	// dead still.
	DeadGrowth int `json:"dead_growth"`
}

type outcomeSeries struct {
	Time      []int64 `json:"time"`
	Succeeded []int   `json:"succeeded"`
	Recovered []int   `json:"recovered"`
	Failed    []int   `json:"failed"`
	Retried   []int   `json:"retried"`
	Dead      []int   `json:"dead"`
}

type latenessSeries struct {
	Time []int64   `json:"time"`
	P50  []float64 `json:"p50_ms"`
	P95  []float64 `json:"p95_ms"`
	// Retries is how many retries each point is computed from.
	Retries []int `json:"retries"`
}

type instanceRow struct {
	ID        string    `json:"id"`
	Live      bool      `json:"live"`
	Shards    string    `json:"shards"`
	Names     []string  `json:"names"`
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
	// Granted are the cap's slots granted to instances claiming without
	// the group's lock (docs/flow-control.md, "Slot grants"), and to how
	// many.
	Granted  int `json:"granted_slots"`
	Grantees int `json:"granted_instances"`
}

// readOverview reads the overview over the window before now, counting
// the dead letters up to deadCap.
func readOverview(ctx context.Context, in *runtime.Inspector, now time.Time, window, bucket time.Duration, deadCap int) (*overviewData, error) {
	ov, err := in.Overview(ctx, now.Add(-window), bucket)
	if err != nil {
		return nil, err
	}
	d := &overviewData{At: ov.At, Window: shortDuration(window), Instances: []instanceRow{}, Unrunnable: []string{}, Breakers: []breakerRow{}, Counts: []countRow{}}
	cells := map[nameTenant]map[runtime.State]int{}
	seen := map[runtime.State]bool{}
	for _, c := range ov.Counts {
		k := nameTenant{c.Name, c.Tenant}
		if cells[k] == nil {
			cells[k] = map[runtime.State]int{}
		}
		cells[k][c.State] += c.N
		seen[c.State] = true
	}
	growth := map[nameTenant]int{}
	for _, g := range ov.DeadGrowth {
		k := nameTenant{g.Name, g.Tenant}
		growth[k] = g.N
		if cells[k] == nil {
			cells[k] = map[runtime.State]int{}
		}
	}
	d.fillCounts(cells2rows(cells), seen, growth)
	// Bounded, as the list's count: the dead rows not requeued are found by
	// the state index and checked row by row, so an exact count reads every
	// dead row (all of them on a large table).
	deadLetters := runtime.Filter{States: []runtime.State{runtime.StateDead}, NotRequeued: true}
	if d.DeadLetters, d.DeadLettersMore, err = in.CountUpTo(ctx, deadLetters, deadCap); err != nil {
		return nil, err
	}
	d.Outcomes = outcomeSeries{Time: []int64{}, Succeeded: []int{}, Recovered: []int{}, Failed: []int{}, Retried: []int{}, Dead: []int{}}
	for _, b := range ov.Buckets {
		o := &d.Outcomes
		o.Time = append(o.Time, b.Start.Unix())
		o.Succeeded = append(o.Succeeded, b.Succeeded)
		o.Recovered = append(o.Recovered, b.Recovered)
		o.Failed = append(o.Failed, b.FailedAttempts)
		o.Retried = append(o.Retried, b.Retried)
		o.Dead = append(o.Dead, b.Dead)
	}
	d.Lateness = latenessSeries{Time: []int64{}, P50: []float64{}, P95: []float64{}, Retries: []int{}}
	for _, b := range ov.Lateness {
		l := &d.Lateness
		l.Time = append(l.Time, b.Start.Unix())
		l.P50 = append(l.P50, float64(b.P50)/float64(time.Millisecond))
		l.P95 = append(l.P95, float64(b.P95)/float64(time.Millisecond))
		l.Retries = append(l.Retries, b.Retries)
	}
	for _, i := range ov.Instances {
		d.Instances = append(d.Instances, instanceRow{ID: i.ID, Live: i.Live, Shards: shardRanges(i.Shards), Names: i.Names, Heartbeat: i.Heartbeat, Held: i.HeldRetries})
	}
	d.Unrunnable = append(d.Unrunnable, ov.UnrunnableNames...)
	groups, err := in.FlowGroups(ctx)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		row := breakerRow{Group: g.Group, Members: g.Members, Breaker: g.Breaker, Until: g.Until, OK: g.WindowOK, Failed: g.WindowFailed, Grantees: len(g.Grants)}
		for _, gr := range g.Grants {
			row.Granted += gr.Slots
		}
		d.Breakers = append(d.Breakers, row)
	}
	return d, nil
}

// nameTenant keys the counts table.
type nameTenant struct{ name, tenant string }

// shardRanges writes shards as ranges: "0-15, 32, 40-47" ("-" for none).
func shardRanges(shards []int) string {
	if len(shards) == 0 {
		return "-"
	}
	s := slices.Clone(shards)
	slices.Sort(s)
	var parts []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(s[i]))
		} else {
			parts = append(parts, strconv.Itoa(s[i])+"-"+strconv.Itoa(s[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// cellsRow is one name and tenant's counts by state.
type cellsRow struct {
	name, tenant string
	byState      map[runtime.State]int
}

func cells2rows(cells map[nameTenant]map[runtime.State]int) []cellsRow {
	var rows []cellsRow
	for k, m := range cells {
		rows = append(rows, cellsRow{k.name, k.tenant, m})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].name != rows[j].name {
			return rows[i].name < rows[j].name
		}
		return rows[i].tenant < rows[j].tenant
	})
	return rows
}

// alwaysShownStates have a column in the counts table even when no task
// is in them, so that the table keeps its shape as tasks move.
var alwaysShownStates = []runtime.State{runtime.StatePending, runtime.StateRunning, runtime.StateRetrying, runtime.StateSucceeded, runtime.StateDead, runtime.StateDiscarded}

// fillCounts lays rows out as the counts table: a column per state always
// shown or seen, in state order.
func (d *overviewData) fillCounts(rows []cellsRow, seen map[runtime.State]bool, deadGrowth map[nameTenant]int) {
	var states []runtime.State
	for _, s := range runtime.AllStates {
		if seen[s] || slices.Contains(alwaysShownStates, s) {
			states = append(states, s)
			d.States = append(d.States, s.String())
		}
	}
	if d.States == nil {
		d.States = []string{}
	}
	d.Totals = make([]int, len(states))
	for _, r := range rows {
		cr := countRow{Name: r.name, Tenant: r.tenant, Counts: make([]int, len(states)), DeadGrowth: deadGrowth[nameTenant{r.name, r.tenant}]}
		for i, s := range states {
			cr.Counts[i] = r.byState[s]
			cr.Total += r.byState[s]
			d.Totals[i] += r.byState[s]
		}
		d.Counts = append(d.Counts, cr)
	}
}

// shortDuration writes d without its zero minutes and seconds ("6h", not
// "6h0m0s").
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
