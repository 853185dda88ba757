package faultcheck

import (
	"fmt"
	"time"
)

// Lost dependency releases (#22 break 3). A blocked task is released in
// the transaction that settles its last upstream task; the blocked sweeper
// (maintenance.BlockedSweeper) is a backstop for a release lost on a
// multi-writer cluster. With one writer — a single server, SQLite, or
// Galera through one node as argo runs it — nothing may ever be left for
// it: each task it settles is a release the code lost, which it would
// otherwise hide behind a delay of a few seconds.

// FeatureDeadlock: in the workload's race pairs (an upstream call of 0–3 ms,
// then its dependent call), the dependent submit's first try is rolled back
// at its COMMIT with the server's deadlock error (1213) after it has read
// its upstream task unfinished, and its second try begins once the upstream
// task has ended (or after DeadlockWait): the interleaving of #22 break 3a,
// which InnoDB's own deadlocks did not produce in 40 runs. MySQL family
// only (SQLite never retries a write transaction: writers queue).
const FeatureDeadlock = "deadlock"

// DeadlockWait bounds how long an injected deadlock's retry waits for the
// upstream task to end.
const DeadlockWait = 3 * time.Second

// InvReleaseLost: the blocked sweeper settled no task (no dependency
// release was lost).
const InvReleaseLost = "release-lost"

// KindSwept is a worker's blocked sweeper settling ID tasks (Ev "settled"),
// seen in its log.
const KindSwept = "swept"

// KindDeadlock is an injected deadlock of call Op: Ev "injected" when its
// first try was rolled back, Ev "retry" when the second try began, Out
// "upstream-ended" if every upstream task had ended by then, else
// "upstream-running".
const KindDeadlock = "deadlock"

// Deadlock retry outcomes (KindDeadlock, Ev "retry").
const (
	DeadlockUpstreamEnded   = "upstream-ended"
	DeadlockUpstreamRunning = "upstream-running"
)

// checkReleaseLost is InvReleaseLost over in.
func checkReleaseLost(in Input, bad func(inv, format string, args ...any)) {
	for _, r := range in.Records {
		if r.Kind == KindSwept {
			bad(InvReleaseLost, "%s: the blocked sweeper on %s settled %d blocked task(s) whose upstream tasks had all ended: a dependency release was lost (the transaction that ended the last upstream task, or the dependent submit, should have released it)",
				clock(r.Time()), r.Inst, r.ID)
		}
	}
}

// deadlockFigures counts the injected deadlocks of recs and the retries
// that began after the upstream task had ended.
func deadlockFigures(recs []Record) string {
	injected, ended := 0, 0
	for _, r := range recs {
		switch {
		case r.Kind == KindDeadlock && r.Ev == "injected":
			injected++
		case r.Kind == KindDeadlock && r.Ev == "retry" && r.Out == DeadlockUpstreamEnded:
			ended++
		}
	}
	return fmt.Sprintf("%d dependent submits rolled back by an injected deadlock, %d retried after their upstream task ended", injected, ended)
}
