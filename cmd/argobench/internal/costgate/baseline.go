package costgate

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Baseline is the committed counts: engine → workload → counts per unit.
type Baseline map[string]map[string]PerUnit

// Tolerance is the rise over the baseline a count may show before the gate
// fails (and the fall below it that asks for the baseline to be lowered).
const Tolerance = 0.05

// ReadBaseline reads path (a missing file is an empty baseline).
func ReadBaseline(path string) (Baseline, error) {
	b := Baseline{}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return b, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// Write writes b to path, indented, keys sorted (so a change reads as a
// small diff in review).
func (b Baseline) Write(path string) error {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Change is one count compared with its baseline.
type Change struct {
	Workload, Engine, Counter string
	Base, Now                 float64
}

// Rel is the relative change (+0.10 = 10% more); a count new from zero is +Inf-like 1.
func (c Change) Rel() float64 {
	if c.Base == 0 {
		if c.Now == 0 {
			return 0
		}
		return 1
	}
	return (c.Now - c.Base) / c.Base
}

// Rose reports a rise over the tolerance; Fell, a fall under it.
func (c Change) Rose() bool { return c.Rel() > Tolerance+1e-9 }
func (c Change) Fell() bool { return c.Rel() < -Tolerance-1e-9 }

// Compare returns the counts of now against base, engine by engine,
// workload by workload (those missing from base have Base 0).
func Compare(base, now Baseline) []Change {
	var out []Change
	for _, eng := range sortedKeys(now) {
		for _, w := range Workloads {
			n, ok := now[eng][w.Name]
			if !ok {
				continue
			}
			b := base[eng][w.Name]
			out = append(out,
				Change{w.Name, eng, "statements", b.Statements, n.Statements},
				Change{w.Name, eng, "trips", b.Trips, n.Trips},
				Change{w.Name, eng, "commits", b.Commits, n.Commits})
		}
	}
	return out
}

// PrintTable writes the table of changes, with the statement kinds that
// moved under each workload that changed.
func PrintTable(w io.Writer, cs []Change, base, now Baseline) {
	fmt.Fprintf(w, "%-11s %-14s %-10s %9s %9s %8s\n", "workload", "engine", "counter", "baseline", "now", "change")
	for _, c := range cs {
		mark := ""
		switch {
		case c.Rose():
			mark = "  ROSE"
		case c.Fell():
			mark = "  fell"
		}
		fmt.Fprintf(w, "%-11s %-14s %-10s %9.2f %9.2f %+7.1f%%%s\n", c.Workload, c.Engine, c.Counter, c.Base, c.Now, 100*c.Rel(), mark)
	}
	// Which statements moved, for the workloads that changed.
	seen := map[string]bool{}
	for _, c := range cs {
		key := c.Engine + "/" + c.Workload
		if seen[key] || (!c.Rose() && !c.Fell()) {
			continue
		}
		seen[key] = true
		b, n := base[c.Engine][c.Workload].Kinds, now[c.Engine][c.Workload].Kinds
		var diffs []string
		for _, k := range unionKeys(b, n) {
			if b[k] != n[k] {
				diffs = append(diffs, fmt.Sprintf("%s %.2f→%.2f", k, b[k], n[k]))
			}
		}
		fmt.Fprintf(w, "  %s: %s\n", key, strings.Join(diffs, ", "))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func unionKeys(a, b map[string]float64) []string {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return sortedKeys(m)
}
