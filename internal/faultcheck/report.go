package faultcheck

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Run describes one run of the checker, for its report.
type Run struct {
	Engine   string
	Seed     uint64
	Duration time.Duration // of the workload (faults on)
	Settle   time.Duration // from the end of the faults until every call was terminal (or the bound)
	Bound    time.Duration // the settle bound
	Features Features
	Faults   Faults
	Schedule []Fault
	Done     []Fault // the faults carried out (a partition on SQLite is skipped)
	Slots    int
	Expect   string    // invariants expected to fail (-faultcheck.expect)
	Start    time.Time // of the workload
}

// Figures are a run's counts.
type Figures struct {
	Submits    int // submit calls
	Executions int // attempts and fallbacks started
	Rows       int // tasks in the table at the end
	Records    int // history lines checked
	Answers    map[string]int
	ByTask     map[string]int // executions started, by task name
	Operator   map[string]int // operator actions, by action and answer
	Deadlocks  string         // the injected deadlocks (release.go)
}

// Count counts recs.
func Count(recs []Record, rows int) Figures {
	f := Figures{Rows: rows, Records: len(recs), Answers: map[string]int{}, ByTask: map[string]int{}, Operator: map[string]int{},
		Deadlocks: deadlockFigures(recs)}
	for _, r := range recs {
		switch {
		case r.Kind == KindSubmit && r.Ev == "begin":
			f.Submits++
		case r.Kind == KindSubmit && r.Ev == "end":
			f.Answers[r.Answer]++
		case r.Kind == KindExec && r.Ev == "start":
			f.Executions++
			f.ByTask[r.Name]++
		case r.Kind == KindOperator && !strings.HasSuffix(r.Ev, ":begin"):
			f.Operator[r.Ev+" "+r.Answer]++
		case r.Kind == KindInjected:
			f.Operator["attempts failed by injection"]++
		}
	}
	return f
}

// Replay is the command line that replays r.
func (r Run) Replay(test string) string {
	expect := r.Expect
	if expect == "" {
		expect = "none"
	}
	return fmt.Sprintf("go test -race -count=1 -run '%s$' ./internal/faultcheck/ -faultcheck.seed=%d -faultcheck.duration=%s -faultcheck.features=%s -faultcheck.faults=%s -faultcheck.expect=%s",
		test, r.Seed, r.Duration, r.Features, faultsArg(r.Faults), expect)
}

func faultsArg(f Faults) string {
	if s := f.String(); s != "" {
		return s
	}
	return "none"
}

// Summary is one paragraph on the run and its figures.
func (r Run) Summary(f Figures) string {
	var ans []string
	for k, v := range f.Answers {
		ans = append(ans, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(ans)
	var by []string
	for k, v := range f.ByTask {
		by = append(by, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(by)
	var ops []string
	for k, v := range f.Operator {
		ops = append(ops, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(ops)
	if len(ops) == 0 {
		ops = []string{"none"}
	}
	per := func(n int) float64 { return float64(n) / max(r.Duration+r.Settle, time.Second).Minutes() }
	return fmt.Sprintf("faultcheck %s seed %d: %d workers, %s of faults + %s to settle (bound %s); features %s; faults %s\n"+
		"  %d submits (%s), %d executions (%s), %d tasks, %d faults carried out, %d history lines checked\n"+
		"  operator actions: %s\n"+
		"  %s\n"+
		"  per minute: %.0f operations, %.0f executions, %.1f faults, %.0f history lines",
		r.Engine, r.Seed, r.Slots, r.Duration, r.Settle.Round(time.Millisecond), r.Bound, r.Features, faultsArg(r.Faults),
		f.Submits, strings.Join(ans, ", "), f.Executions, strings.Join(by, ", "), f.Rows, len(r.Done), f.Records, strings.Join(ops, ", "), f.Deadlocks,
		per(f.Submits), per(f.Executions), per(len(r.Done)), per(f.Records))
}

// Report is the failure message: the seed, the schedule, how to replay,
// and the violations, grouped by invariant (at most perInv of each).
func (r Run) Report(test string, vs []Violation, perInv int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "faultcheck %s: %d violations with seed %d (features %s, faults %s)\n", r.Engine, len(vs), r.Seed, r.Features, faultsArg(r.Faults))
	fmt.Fprintf(&b, "replay: %s\n", r.Replay(test))
	fmt.Fprintf(&b, "fault schedule (carried out):\n%s\n", FormatSchedule(r.Done))
	counts := map[string]int{}
	first := map[string]time.Time{}
	for _, v := range vs {
		counts[v.Inv]++
		if !v.At.IsZero() && (first[v.Inv].IsZero() || v.At.Before(first[v.Inv])) {
			first[v.Inv] = v.At
		}
		if counts[v.Inv] <= perInv {
			when := "final state"
			if !v.At.IsZero() {
				when = "+" + v.At.Sub(r.Start).Round(time.Millisecond).String()
			}
			fmt.Fprintf(&b, "  [%s] %s: %s\n", v.Inv, when, v.Detail)
		}
	}
	var invs []string
	for k := range counts {
		invs = append(invs, k)
	}
	sort.Strings(invs)
	for _, k := range invs {
		if counts[k] > perInv {
			fmt.Fprintf(&b, "  [%s] ... and %d more\n", k, counts[k]-perInv)
		}
	}
	for _, k := range invs {
		when := "in the final state"
		if !first[k].IsZero() {
			when = "first at +" + first[k].Sub(r.Start).Round(time.Millisecond).String() + " into the workload"
		}
		fmt.Fprintf(&b, "  %s: %d violations, %s\n", k, counts[k], when)
	}
	return b.String()
}
