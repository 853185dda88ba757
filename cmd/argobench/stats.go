package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// percentile returns the p-th percentile (0..100) of sorted xs, nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

func sortedDurations(xs []time.Duration) []time.Duration {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s
}

// Stat is one metric over the runs: its median and spread.
type Stat struct {
	Runs   []float64 `json:"runs"`
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
}

func newStat(runs []float64) *Stat {
	if len(runs) == 0 {
		return nil
	}
	s := slices.Clone(runs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return &Stat{Runs: runs, Median: med, Min: s[0], Max: s[len(s)-1]}
}

// Unit says how a metric's numbers print and which way is better.
type Unit string

const (
	UnitDuration Unit = "s"  // seconds; lower is better
	UnitRate     Unit = "/s" // per second; higher is better
	UnitBytes    Unit = "B"  // bytes; lower is better
	UnitRatio    Unit = "x"  // a plain ratio
	UnitCount    Unit = "n"  // a count
)

func (u Unit) format(v float64) string {
	switch u {
	case UnitDuration:
		return fmtDuration(v)
	case UnitRate:
		return fmtRate(v)
	case UnitBytes:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case UnitRatio:
		return fmt.Sprintf("%.2f×", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func fmtDuration(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d < 0:
		return "-" + fmtDuration(-sec)
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func fmtRate(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.1fk/s", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f/s", v)
	}
	return fmt.Sprintf("%.1f/s", v)
}

// fmtStat prints "median (min–max)", or the median alone for one run.
func fmtStat(s *Stat, u Unit) string {
	if s == nil {
		return "—"
	}
	if len(s.Runs) == 1 || s.Min == s.Max {
		return u.format(s.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", u.format(s.Median), u.format(s.Min), u.format(s.Max))
}
