// Package faultcheck is argo's randomized fault-injecting history checker,
// in the spirit of Jepsen and FoundationDB's simulation: several worker OS
// processes (./faultworker) share one database and submit a seeded mix of
// calls (workload.go) while a seeded nemesis (nemesis.go) kills them with
// SIGKILL, stops them mid-attempt, cuts them off from the database through
// a fault proxy and loses the answers to their writes. Every submit and
// every execution is appended to a per-process history file, fsynced line
// by line so that it survives kill -9 (history.go). When the faults stop
// and the calls have settled, the histories and the tables' final state
// are checked against argo's promise (invariants.go) and each violation is
// printed with the seed and the fault schedule that led to it (report.go).
//
// A seed replays the same operations and the same fault schedule (the
// timing of the processes is the operating system's). The tests are in
// faultcheck_test.go; docs/faultcheck.md says how to run, replay and soak.
//
// This file holds what the workers and the checker share: the task
// definitions and the arguments every call carries.
package faultcheck

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/argo-retry/argo/runtime"
)

// Task names, one per retry policy of the workload.
const (
	TaskPlain    = "fc.plain"    // 8 attempts, quick fixed backoff: succeeds after Args.Fail failures
	TaskSync     = "fc.sync"     // as TaskPlain, first attempt in the caller's goroutine (Thread Sync)
	TaskDead     = "fc.dead"     // 2 attempts, always failing: ends dead
	TaskFallback = "fc.fallback" // 2 attempts, always failing, a fallback that succeeds: ends recovered
	TaskOnce     = "fc.once"     // 1 attempt (retries=0): succeeds at its only attempt
	TaskCapped   = "fc.capped"   // as TaskPlain, under a concurrency cap of CapLimit (flow group fc-cap)
	TaskRated    = "fc.rated"    // as TaskPlain, under a rate of RateLimit/s with burst RateBurst (flow group fc-rate)
	TaskBudget   = "fc.budget"   // as TaskPlain, under a retry budget (flow group fc-budget: BudgetShare per BudgetWindow)
)

// The flow limits of TaskCapped and TaskRated.
const (
	CapLimit  = 3
	RateLimit = 5
	RateBurst = 3
)

// The retry budget of TaskBudget (group BudgetGroup): a share of 1 (as
// many retries as first attempts, plus BudgetMinRetries) so that no call
// waits for the next window (a call fails once at most), and a window longer than make test's run, so that the
// group's counters at the end count the whole run (the invariant
// retry-budget compares them with the histories).
const (
	BudgetGroup      = "fc-budget"
	BudgetShare      = 1.0
	BudgetWindow     = time.Hour
	BudgetMinRetries = 5
)

// TaskNames lists every task of the workload.
var TaskNames = []string{TaskPlain, TaskSync, TaskDead, TaskFallback, TaskOnce, TaskCapped, TaskRated, TaskBudget}

// Args are every call's arguments. Op names the call (slot-op-call), so that
// a row is traced back to its submit even when the submit's answer was lost;
// Text and Blob carry the odd bytes whose exactness is checked.
type Args struct {
	Op   string `json:"op"`
	Fail int    `json:"fail"`           // first attempts that fail transiently
	Perm bool   `json:"perm,omitempty"` // the first failure is permanent
	// RetryAfter: the first attempt asks for a retry after this many ms
	// (runtime.RetryAfter) instead of failing plainly.
	RetryAfter int `json:"retry_after,omitempty"`
	// GiveBack: the first time a process runs the call's first attempt, it
	// answers runtime.Undecodable (an instance of a deployment that cannot
	// decode the arguments yet): the attempt is given back undone, and runs
	// again as attempt 1 (#22 break 6: it must not count twice in its
	// group's retry budget).
	GiveBack bool   `json:"give_back,omitempty"`
	WorkMS   int    `json:"work_ms"` // how long an attempt works (it honours its context)
	Text     string `json:"text"`    // multi-byte UTF-8 and escapes
	Blob     []byte `json:"blob"`    // arbitrary bytes (base64 in JSON), up to tens of KiB
}

// Sum is the digest of a call's encoded arguments, compared byte for byte
// between the submit, the table and every execution.
func Sum(raw []byte) string {
	h := sha256.Sum256(raw)
	return hex.EncodeToString(h[:12])
}

// Defs returns the workload's task definitions without Run (the workers add
// it); the same definitions are used to submit.
func Defs() map[string]*runtime.TaskDef {
	fixed := func(n int) runtime.RetryPolicy {
		return runtime.RetryPolicy{MaxAttempts: n, Backoff: runtime.BackoffFixed, Initial: 20 * time.Millisecond, Jitter: runtime.Jitter{Kind: runtime.JitterNone}}
	}
	return map[string]*runtime.TaskDef{
		TaskPlain:    {Name: TaskPlain, Policy: fixed(8)},
		TaskSync:     {Name: TaskSync, Policy: fixed(8), Thread: runtime.Sync},
		TaskDead:     {Name: TaskDead, Policy: fixed(2)},
		TaskFallback: {Name: TaskFallback, Policy: fixed(2), FallbackName: "fc.recover"},
		TaskOnce:     {Name: TaskOnce, Policy: fixed(1)},
		TaskCapped:   {Name: TaskCapped, Policy: fixed(8), Flow: &runtime.FlowControl{Group: "fc-cap", Limit: CapLimit}},
		TaskRated:    {Name: TaskRated, Policy: fixed(8), Flow: &runtime.FlowControl{Group: "fc-rate", Rate: RateLimit, Burst: RateBurst}},
		TaskBudget:   {Name: TaskBudget, Policy: fixed(8), Flow: &runtime.FlowControl{Group: BudgetGroup, RetryBudget: &runtime.RetryBudget{Share: BudgetShare, Window: BudgetWindow, MinRetries: BudgetMinRetries}}},
	}
}

// Expected is the terminal state a call of task name with args a reaches
// when nothing but lease expiries (kills) gets in its way, and whether a
// dead end is also acceptable because attempts were charged by lease
// expiries (only for TaskOnce, see invariants.go).
func Expected(name string, a Args) runtime.State {
	switch {
	case name == TaskDead || a.Perm:
		return runtime.StateDead
	case name == TaskFallback:
		return runtime.StateRecovered
	}
	return runtime.StateSucceeded
}
