package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// Report is everything one argobench run measured.
type Report struct {
	Env    Env         `json:"env"`
	Rows   []*Row      `json:"rows"`
	Plans  []*Plan     `json:"plans,omitempty"`
	Audit  []*AuditRow `json:"audit,omitempty"`
	WhatIf []*Row      `json:"what_if,omitempty"` // hand-written batching, as proposed for the runtime
	Notes  []string    `json:"notes,omitempty"`
	Errors []string    `json:"errors,omitempty"`

	// Cluster is what the cluster workload ran, setup by setup (cluster.go).
	Cluster []*ClusterSetupReport `json:"cluster,omitempty"`
}

// Row is one line of the table.
type Row struct {
	Workload string   `json:"workload"`
	Metric   string   `json:"metric"`
	Unit     Unit     `json:"unit"`
	Argo     *Stat    `json:"argo"`
	Hand     *Stat    `json:"hand,omitempty"`
	Ratio    *float64 `json:"ratio,omitempty"` // argo median / hand median
	Target   string   `json:"target,omitempty"`
	Met      string   `json:"met,omitempty"` // yes, no, or empty
	Note     string   `json:"note,omitempty"`
}

// Plan is the query plan of a claim query at one table size.
type Plan struct {
	Side  string   `json:"side"`
	Rows  string   `json:"rows"`
	Query string   `json:"query"`
	Plan  []string `json:"plan"`
}

// AuditRow is what one side asked of the database per call in one workload.
type AuditRow struct {
	Workload string             `json:"workload"`
	Side     string             `json:"side"`
	Calls    int                `json:"calls"`
	PerCall  map[string]float64 `json:"per_call"`     // operation → count per call
	TimeUs   map[string]float64 `json:"time_us"`      // operation → µs per call
	Ops      float64            `json:"ops_per_call"` // every operation (≈ round trips on MySQL)
	Commits  float64            `json:"commits_per_call"`
	DBTimeUs float64            `json:"db_time_us_per_call"`
	WallUs   float64            `json:"wall_us_per_call"`
}

func (r *Report) add(row *Row) *Row {
	if row.Argo != nil && row.Hand != nil && row.Hand.Median != 0 {
		ratio := row.Argo.Median / row.Hand.Median
		row.Ratio = &ratio
	}
	r.Rows = append(r.Rows, row)
	return row
}

func (r *Report) print(w io.Writer) {
	e := r.Env
	fmt.Fprintf(w, "argobench — argo against hand-written database/sql, same database, same run\n\n")
	fmt.Fprintf(w, "machine:    %d CPUs, %s, %s, %s\n", e.CPUs, e.CPUModel, e.MemTotal, e.OS)
	fmt.Fprintf(w, "load avg:   %s at start, %s at end\n", e.LoadStart, e.LoadEnd)
	fmt.Fprintf(w, "go:         %s; built from revision %s\n", e.GoVersion, dash(e.Revision))
	if e.Label != "" {
		fmt.Fprintf(w, "label:      %s\n", e.Label)
	}
	fmt.Fprintf(w, "database:   %s (%s) %s\n", e.Server, e.Dialect, e.DSN)
	var ks []string
	for k := range e.Durability {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var kv []string
	for _, k := range ks {
		kv = append(kv, k+"="+e.Durability[k])
	}
	fmt.Fprintf(w, "settings:   %s\n", strings.Join(kv, " "))
	fmt.Fprintf(w, "bench:      scale %g, %d run(s) per workload (median (min–max)), argo Workers=%d, %d submitting goroutines, hand-written claim LIMIT %d; started %s, took %.0fs\n\n",
		e.Scale, e.Runs, e.Workers, e.Submitters, e.HandBatch, e.StartedAt, e.DurationSec)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tmetric\targo\thand-written\targo/hand\ttarget\tmet\tnote")
	for _, row := range r.Rows {
		ratio := "—"
		if row.Ratio != nil {
			ratio = fmt.Sprintf("%.2f×", *row.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", row.Workload, row.Metric, fmtStat(row.Argo, row.Unit), fmtStat(row.Hand, row.Unit), ratio, dash(row.Target), dash(row.Met), row.Note)
	}
	tw.Flush()

	if len(r.Plans) > 0 {
		fmt.Fprintf(w, "\nclaim query plans:\n")
		for _, p := range r.Plans {
			fmt.Fprintf(w, "  %s, %s:\n", p.Side, p.Rows)
			for _, l := range p.Plan {
				fmt.Fprintf(w, "      %s\n", l)
			}
		}
		seen := map[string]bool{}
		for _, p := range r.Plans {
			if !seen[p.Side] {
				seen[p.Side] = true
				fmt.Fprintf(w, "  %s claim query: %s\n", p.Side, p.Query)
			}
		}
	}
	if len(r.Audit) > 0 {
		fmt.Fprintf(w, "\ndatabase operations per call (driver-level count; on MySQL each is one network round trip):\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "workload\tside\tcalls\tops/call\tcommits/call\tdb time/call\twall/call\toperations per call (µs each)")
		for _, a := range r.Audit {
			var ops []string
			keys := make([]string, 0, len(a.PerCall))
			for k := range a.PerCall {
				keys = append(keys, k)
			}
			sort.Slice(keys, func(i, j int) bool {
				return a.PerCall[keys[i]] > a.PerCall[keys[j]] || (a.PerCall[keys[i]] == a.PerCall[keys[j]] && keys[i] < keys[j])
			})
			for _, k := range keys {
				per := a.PerCall[k]
				each := 0.0
				if per > 0 {
					each = a.TimeUs[k] / per
				}
				ops = append(ops, fmt.Sprintf("%s %.2f (%.0f)", k, per, each))
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%.2f\t%s\t%s\t%s\n", a.Workload, a.Side, a.Calls, a.Ops, a.Commits, fmtDuration(a.DBTimeUs/1e6), fmtDuration(a.WallUs/1e6), strings.Join(ops, ", "))
		}
		tw.Flush()
	}
	if len(r.WhatIf) > 0 {
		fmt.Fprintf(w, "\nwhat batching submits would buy (hand-written, same database):\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "workload\tvariant\tfigure\tvs plain hand-written")
		for _, row := range r.WhatIf {
			vs := "—"
			for _, main := range r.Rows {
				if main.Workload == row.Workload && main.Hand != nil && main.Hand.Median > 0 {
					vs = fmt.Sprintf("%.2f×", row.Argo.Median/main.Hand.Median)
					break
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", row.Workload, row.Metric, fmtStat(row.Argo, row.Unit), vs)
		}
		tw.Flush()
	}
	if len(r.Notes) > 0 {
		fmt.Fprintf(w, "\nnotes:\n")
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	if len(r.Errors) > 0 {
		fmt.Fprintf(w, "\nERRORS:\n")
		for _, e := range r.Errors {
			fmt.Fprintf(w, "  - %s\n", e)
		}
	}
}

func dash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
