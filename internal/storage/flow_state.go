package storage

import (
	"math"
	"slices"
	"strings"
)

// Flow control per group of task names (docs/flow-control.md): the state
// every instance shares (one argo_flow row per group) and the rules that
// decide, from it, how many attempts may start. The rules are pure
// functions of the state, the policy and the time; the Store runs them
// inside the transaction that holds the group's row (flow.go).

// BreakerState is argo_flow.breaker_state.
type BreakerState int

// The breaker states.
const (
	// BreakerClosed: attempts start (within the cap and the rate).
	BreakerClosed BreakerState = 0
	// BreakerOpen: no attempt starts until breaker_until (the cool-down).
	BreakerOpen BreakerState = 1
	// BreakerHalfOpen: one probe attempt is out (probe_task) until
	// breaker_until; its outcome closes or reopens the breaker. A probe
	// not reported by then (its instance died) is replaced by another.
	BreakerHalfOpen BreakerState = 2
	// BreakerForcedOpen: opened by an operator; only an operator closes it.
	BreakerForcedOpen BreakerState = 3
)

func (b BreakerState) String() string {
	switch b {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half-open"
	case BreakerForcedOpen:
		return "forced-open"
	}
	return "unknown"
}

// FlowColumns is the column list of argo_flow in FlowState's field order.
const FlowColumns = "group_name, members, lock_seq, tokens, refilled_at, breaker_state, breaker_until, cooldown_ms, probe_task, window_start, window_ok, window_failed, closed_at, opened_count, updated_at"

// FlowState is one argo_flow row: a group's shared state.
type FlowState struct {
	Group        string       `db:"group_name"`
	Members      string       `db:"members"` // task names, one per line, sorted
	LockSeq      int64        `db:"lock_seq"`
	Tokens       float64      `db:"tokens"`
	RefilledAt   Millis       `db:"refilled_at"`
	Breaker      BreakerState `db:"breaker_state"`
	BreakerUntil Millis       `db:"breaker_until"`
	CooldownMs   int64        `db:"cooldown_ms"`
	ProbeTask    int64        `db:"probe_task"`
	WindowStart  Millis       `db:"window_start"`
	WindowOK     int          `db:"window_ok"`
	WindowFailed int          `db:"window_failed"`
	ClosedAt     Millis       `db:"closed_at"`
	OpenedCount  int          `db:"opened_count"`
	UpdatedAt    Millis       `db:"updated_at"`
	// The retry budget's window (flow_budget.go): its start, and the first
	// attempts and retries started in it.
	BudgetStart   Millis `db:"budget_start"`
	BudgetFirsts  int    `db:"budget_firsts"`
	BudgetRetries int    `db:"budget_retries"`
	// Grants are the cap's slot grants (flow_grants.go), one per line.
	Grants string `db:"grants"`
}

// flowWriteArgs are the arguments of Statements.FlowWrite.
func (st *FlowState) flowWriteArgs() []any {
	return []any{st.Members, st.Tokens, st.RefilledAt, st.Breaker, st.BreakerUntil, st.CooldownMs, st.ProbeTask,
		st.WindowStart, st.WindowOK, st.WindowFailed, st.ClosedAt, st.OpenedCount, st.UpdatedAt,
		st.BudgetStart, st.BudgetFirsts, st.BudgetRetries, st.Grants, st.Group}
}

// FlowPolicy is what a group enforces. The zero value enforces nothing
// (only an operator's open breaker).
type FlowPolicy struct {
	// Limit caps the attempts of the group running at once across the
	// cluster; 0: no cap.
	Limit int
	// Rate is the attempts per second the group may start across the
	// cluster; 0: no limit. Burst is the bucket's size (attempts that may
	// start at once after a quiet spell); 0: max(1, Rate).
	Rate  float64
	Burst int
	// Breaker, if set, is the group's circuit breaker.
	Breaker *BreakerPolicy
	// RetryBudget, if set, bounds the group's retries by its first attempts.
	RetryBudget *RetryBudgetPolicy
}

// BreakerPolicy configures a group's circuit breaker. Durations are in
// milliseconds.
type BreakerPolicy struct {
	// The breaker opens when, within one window of WindowMs, at least
	// Failures attempts failed and, if Ratio > 0, failures are at least
	// Ratio of the window's attempts (Failures then also serves as the
	// minimum count, so one failure in one attempt does not open it).
	Failures int
	Ratio    float64
	WindowMs int64
	// CooldownMs is the first cool-down; each failed probe doubles it, up
	// to MaxCooldownMs.
	CooldownMs, MaxCooldownMs int64
	// ProbeTimeoutMs is how long a probe may stay unreported before
	// another one starts (its instance died or lost the lease).
	ProbeTimeoutMs int64
	// After closing, attempts start at most at ReleaseRate per second (no
	// burst): the waiting tasks are released gradually, not all at once.
	// The release lasts at least ReleaseForMs, and after that for as long
	// as a claim still finds due a task that was due when the breaker
	// closed (FlowState.releasing): the backlog the breaker held back
	// drains at the release rate however long that takes, and tasks due
	// after the close are not held once it has drained.
	ReleaseRate  float64
	ReleaseForMs int64
}

// wakeBatchesPerSecond bounds the gated claims a rate-limited group asks
// for: it wakes its poller when 1/20 of a second's tokens are in.
const wakeBatchesPerSecond = 20

// burst is the bucket's size.
func (p FlowPolicy) burst() float64 {
	if p.Burst > 0 {
		return float64(p.Burst)
	}
	return math.Max(1, p.Rate)
}

// rateNow is the rate and bucket size in force at now: the group's own,
// or the breaker's release rate (bucket of one) if slower, while a
// release runs (releasing; oldestDue as there).
func (p FlowPolicy) rateNow(st *FlowState, now, oldestDue Millis) (rate, burst float64) {
	rate, burst = p.Rate, p.burst()
	if b := p.Breaker; st.releasing(b, now, oldestDue) {
		if rate == 0 || b.ReleaseRate < rate {
			rate, burst = b.ReleaseRate, 1
		}
	}
	return rate, burst
}

// releasing says whether the breaker's release is in force at now, for a
// claim whose earliest due candidate was due at oldestDue (0: it found
// none): for ReleaseForMs after the close, and after that while the
// backlog the breaker held back lasts, which the claim reads from its own
// candidates (no statement of its own): a candidate due at or before
// closed_at waited through the breaker. Tasks due after the close do not
// prolong it, so it ends once the backlog has drained: bounded by the
// backlog at the close over the release rate, not by new work.
func (st *FlowState) releasing(b *BreakerPolicy, now, oldestDue Millis) bool {
	if b == nil || b.ReleaseRate <= 0 || st.ClosedAt <= 0 {
		return false
	}
	return now < st.ClosedAt+Millis(b.ReleaseForMs) || (oldestDue > 0 && oldestDue <= st.ClosedAt)
}

// releaseNeedsBacklog says whether the release's being in force at now
// depends on the backlog (ReleaseForMs has passed, and the release rate
// would bind): a claim that has not read its candidates before Admit (the
// retry budget's) reads the oldest due one then.
func (p FlowPolicy) releaseNeedsBacklog(st *FlowState, now Millis) bool {
	b := p.Breaker
	return st.releasing(b, now, st.ClosedAt) && !st.releasing(b, now, 0) && (p.Rate == 0 || b.ReleaseRate < p.Rate)
}

// OldestDue is the earliest due time of candidates (0: none), what
// Admit and Took take as oldestDue.
func OldestDue(candidates []*Task) Millis {
	var oldest Millis
	for _, t := range candidates {
		oldest = earlierDue(oldest, t.ExecuteTime)
	}
	return oldest
}

// earlierDue is the earlier of oldest (0: none yet) and due, at least 1 (0
// means none).
func earlierDue(oldest, due Millis) Millis {
	due = max(due, 1)
	if oldest == 0 || due < oldest {
		return due
	}
	return oldest
}

// refill adds the tokens earned since refilled_at, up to burst. A bucket
// never refilled starts full.
func (st *FlowState) refill(rate, burst float64, now Millis) {
	if st.RefilledAt == 0 {
		st.Tokens, st.RefilledAt = burst, now
		return
	}
	if now > st.RefilledAt {
		st.Tokens = math.Min(burst, st.Tokens+rate*float64(now-st.RefilledAt)/1000)
		st.RefilledAt = now
	}
	if st.Tokens > burst {
		st.Tokens = burst
	}
}

// Admit says how many of want attempts may start now, with running of the
// group's attempts running across the cluster, and whether the one it
// admits is the breaker's probe. It refills the bucket and moves an open
// breaker whose cool-down ended to its probe; Took records what started.
// wakeAt is when admitting more may next succeed (0: unknown, or when a
// running attempt ends). oldestDue is the earliest due time of the claim's
// candidates (OldestDue; 0: none), which keeps a breaker's release in force
// while the backlog it held back lasts (releasing).
func (st *FlowState) Admit(p FlowPolicy, now Millis, want, running int, oldestDue Millis) (admit int, probe bool, wakeAt Millis) {
	if p.Limit > 0 {
		want = min(want, p.Limit-running)
	}
	switch st.Breaker {
	case BreakerForcedOpen:
		return 0, false, 0
	case BreakerOpen, BreakerHalfOpen:
		if now < st.BreakerUntil {
			// Open: the cool-down runs, wake at its end. Half-open: the
			// probe is out, and its outcome may close the breaker any time.
			if st.Breaker == BreakerHalfOpen {
				return 0, false, 0
			}
			return 0, false, st.BreakerUntil
		}
		if want <= 0 {
			return 0, false, 0
		}
		return 1, true, 0
	}
	if want <= 0 {
		return 0, false, 0
	}
	if rate, burst := p.rateNow(st, now, oldestDue); rate > 0 {
		st.refill(rate, burst, now)
		if have := int(math.Floor(st.Tokens + 1e-9)); have < want {
			// Wake when a useful batch has come in (1/wakeBatchesPerSecond of
			// a second's tokens, at least one): a fast rate is claimed in
			// batches, not one transaction per token.
			next := math.Min(float64(want), math.Max(1, rate/wakeBatchesPerSecond))
			want = have
			wakeAt = now + Millis(math.Ceil((next-st.Tokens)*1000/rate))
		}
	}
	return max(want, 0), false, wakeAt
}

// Took records that n attempts started after Admit: tokens spent, or the
// probe (the task probeID) sent out. oldestDue is Admit's.
func (st *FlowState) Took(p FlowPolicy, now Millis, n int, probe bool, probeID int64, oldestDue Millis) {
	if n == 0 {
		return
	}
	st.UpdatedAt = now
	if probe {
		st.Breaker, st.ProbeTask = BreakerHalfOpen, probeID
		st.BreakerUntil = now + Millis(p.Breaker.probeTimeout(st))
		return
	}
	if rate, _ := p.rateNow(st, now, oldestDue); rate > 0 {
		st.Tokens -= float64(n)
	}
}

func (b *BreakerPolicy) probeTimeout(st *FlowState) int64 {
	if b != nil && b.ProbeTimeoutMs > 0 {
		return b.ProbeTimeoutMs
	}
	return max(st.CooldownMs, 1000)
}

// Outcome records how an attempt of the group ended (ok: the downstream
// answered: the attempt succeeded, or failed permanently) and moves the
// breaker: a failed window opens it, the
// probe's success closes it (the bounded release starts), its failure
// reopens it with a doubled cool-down. Outcomes of attempts that started
// before the breaker opened change nothing while it is open.
func (st *FlowState) Outcome(p FlowPolicy, now Millis, taskID int64, ok bool) {
	b := p.Breaker
	switch st.Breaker {
	case BreakerHalfOpen:
		if taskID != st.ProbeTask {
			return
		}
		st.UpdatedAt, st.ProbeTask = now, 0
		if ok {
			st.close(now)
			return
		}
		cool := st.CooldownMs * 2
		if b != nil && b.MaxCooldownMs > 0 {
			cool = min(cool, b.MaxCooldownMs)
		}
		st.open(now, max(cool, 1))
		return
	case BreakerOpen, BreakerForcedOpen:
		return
	}
	if b == nil {
		return
	}
	st.UpdatedAt = now
	if now-st.WindowStart >= Millis(b.WindowMs) {
		st.WindowStart, st.WindowOK, st.WindowFailed = now, 0, 0
	}
	if ok {
		st.WindowOK++
		return
	}
	st.WindowFailed++
	if st.WindowFailed < max(b.Failures, 1) {
		return
	}
	if b.Ratio > 0 && float64(st.WindowFailed) < b.Ratio*float64(st.WindowFailed+st.WindowOK) {
		return
	}
	st.open(now, max(b.CooldownMs, 1))
}

// open opens the breaker for a cool-down of cool ms.
func (st *FlowState) open(now Millis, cool int64) {
	st.Breaker, st.BreakerUntil, st.CooldownMs = BreakerOpen, now+Millis(cool), cool
	st.OpenedCount++
	st.WindowStart, st.WindowOK, st.WindowFailed = now, 0, 0
}

// close closes the breaker and starts the bounded release from an empty
// bucket.
func (st *FlowState) close(now Millis) {
	st.Breaker, st.BreakerUntil, st.CooldownMs, st.ProbeTask = BreakerClosed, 0, 0, 0
	st.ClosedAt = now
	st.Tokens, st.RefilledAt = 0, now
	st.WindowStart, st.WindowOK, st.WindowFailed = now, 0, 0
}

// addMembers merges names into Members and reports whether it changed.
func (st *FlowState) addMembers(names []string) bool {
	have := st.MemberNames()
	merged := slices.Clone(have)
	for _, n := range names {
		if !slices.Contains(merged, n) {
			merged = append(merged, n)
		}
	}
	if len(merged) == len(have) {
		return false
	}
	slices.Sort(merged)
	st.Members = strings.Join(merged, "\n")
	return true
}

// MemberNames are the group's task names, as every instance declared them.
func (st *FlowState) MemberNames() []string {
	if st.Members == "" {
		return nil
	}
	return strings.Split(st.Members, "\n")
}
