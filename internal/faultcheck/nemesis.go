package faultcheck

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// The nemesis: a fault schedule drawn from the seed before the run starts,
// so that a seed replays the same faults at the same offsets from the start
// of the workload (the test's driver carries them out, faultcheck_test.go).

// Fault kinds.
const (
	FaultKill      = "kill9"     // SIGKILL a worker process; restarted RestartAfter later
	FaultStop      = "stop"      // SIGTERM a worker mid-attempt (graceful Stop); restarted once it exited
	FaultPartition = "partition" // cut one worker off from the database (proxy: refuse, blackhole or freeze) for Dur (#22 break 1)
	FaultCutAnswer = "cutanswer" // lose the answer to one worker's next task INSERT (the server commits it)
	FaultClaimCut  = "claimcut"  // lose the answer to one worker's next claim COMMIT (#22 break 8)
	FaultServer    = "server"    // restart the database server (MariaDB) or kill a Galera node for Dur
	FaultClock     = "clock"     // restart a worker (graceful Stop) with its clock (Config.Now) off by Offset
)

// AllFaults lists every fault kind.
var AllFaults = []string{FaultKill, FaultStop, FaultPartition, FaultCutAnswer, FaultClaimCut, FaultServer, FaultClock}

// DefaultFaults is what make test runs: every fault kind whose breaks are
// fixed (KnownBreaks names the others).
var DefaultFaults = []string{FaultKill, FaultStop, FaultCutAnswer, FaultServer, FaultClock, FaultPartition, FaultClaimCut}

// Fault is one step of the schedule.
type Fault struct {
	At     time.Duration // from the start of the workload
	Kind   string
	Slot   int           // the worker it hits (partition, kill9, stop, cutanswer, claimcut, clock)
	Dur    time.Duration // how long it lasts (partition, server)
	Mode   string        // partition: refuse, blackhole or freeze
	Offset time.Duration // clock: the step
}

func (f Fault) String() string {
	s := fmt.Sprintf("+%s %s", f.At.Round(time.Millisecond), f.Kind)
	switch f.Kind {
	case FaultKill, FaultStop, FaultCutAnswer, FaultClaimCut:
		s += fmt.Sprintf(" w%d", f.Slot)
	case FaultPartition:
		s += fmt.Sprintf(" w%d %s for %s", f.Slot, f.Mode, f.Dur)
	case FaultServer:
		s += fmt.Sprintf(" for %s", f.Dur)
	case FaultClock:
		s += fmt.Sprintf(" w%d by %s", f.Slot, f.Offset)
	}
	return s
}

// Faults is a set of fault kinds switched on.
type Faults map[string]bool

// ParseFaults parses a comma-separated list as ParseFeatures does.
func ParseFaults(s string) (Faults, error) {
	m, err := parseSwitches(s, "fault", AllFaults, DefaultFaults)
	return Faults(m), err
}

// String lists the faults that are on, sorted.
func (f Faults) String() string { return switchesString(f) }

// Schedule draws the faults of a run of length d with slots workers: one
// fault every 1–4 s (partitions and server faults last 2–8 s, and none
// starts while another one that lasts is still on), the last ending well
// before d.
func Schedule(seed uint64, d time.Duration, slots int, on Faults, canServer bool) []Fault {
	r := rand.New(rand.NewPCG(seed, 0xfa017))
	var kinds []string
	for _, k := range AllFaults {
		if on[k] && (k != FaultServer || canServer) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return nil
	}
	var out []Fault
	at := time.Duration(1000+r.IntN(2000)) * time.Millisecond
	busyUntil := time.Duration(0)
	for at < d-3*time.Second {
		f := Fault{At: at, Kind: kinds[r.IntN(len(kinds))], Slot: r.IntN(slots)}
		switch f.Kind {
		case FaultPartition:
			f.Dur = time.Duration(2000+r.IntN(6000)) * time.Millisecond
			f.Mode = []string{"refuse", "blackhole", "freeze"}[r.IntN(3)]
		case FaultServer:
			f.Dur = time.Duration(2000+r.IntN(4000)) * time.Millisecond
		case FaultClock:
			f.Offset = time.Duration(r.IntN(20000)-10000) * time.Millisecond
		}
		if (f.Kind == FaultPartition || f.Kind == FaultServer) && (at < busyUntil || at+f.Dur > d-2*time.Second) {
			at += time.Duration(500+r.IntN(1000)) * time.Millisecond
			continue
		}
		if f.Dur > 0 {
			busyUntil = at + f.Dur + time.Second
		}
		out = append(out, f)
		at += time.Duration(1000+r.IntN(3000)) * time.Millisecond
	}
	return out
}

// FormatSchedule is the schedule one fault a line, as violations print it.
func FormatSchedule(fs []Fault) string {
	if len(fs) == 0 {
		return "  (no faults)"
	}
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("  " + f.String() + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}
