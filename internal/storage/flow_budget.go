package storage

import "math"

// The retry budget of a flow group (docs/flow-control.md, "Retry budget"):
// within each window, the retries the group starts across the cluster may
// not exceed Share of the first attempts it started in that window, plus
// MinRetries. A retry over the budget is not taken: it stays due and waits,
// without using an attempt, for the next window or for first attempts to
// earn it room. The counters live in the group's argo_flow row (migration
// 000010) and change only inside the gated claim's transaction.

// FlowBudgetColumns are argo_flow's retry-budget columns (migration
// 000010), in FlowState's field order after FlowColumns.
const FlowBudgetColumns = "budget_start, budget_firsts, budget_retries"

// RetryBudgetPolicy is a group's retry budget. WindowMs is in milliseconds.
type RetryBudgetPolicy struct {
	// Share is the most retries per first attempt within a window (0.2:
	// one retry per five first attempts).
	Share float64
	// WindowMs is the window's length; the counters restart with each.
	WindowMs int64
	// MinRetries are the retries a window allows with no first attempt, so
	// a group whose new calls have stopped still retries, slowly.
	MinRetries int
}

// budgetWindow restarts the budget's window when the current one is over.
//
// A claim's now is read before it waits for the group's row, so a claim
// can come after another one whose now is later, and find now a little
// before the window's start: it belongs to the current window (restarting
// it there would drop the counts of the claims in between, and so under-
// count the first attempts that earn retries). Only a start more than a
// window ahead of now (written by a clock that was wrong) restarts it.
func (st *FlowState) budgetWindow(b *RetryBudgetPolicy, now Millis) {
	window := Millis(max(b.WindowMs, 1))
	if now-st.BudgetStart >= window || st.BudgetStart-now > window {
		st.BudgetStart, st.BudgetFirsts, st.BudgetRetries = now, 0, 0
	}
}

// RetryAllowance is how many retries may start now, once firsts more first
// attempts (taken by this claim) are counted. Without a budget, want.
func (st *FlowState) RetryAllowance(p FlowPolicy, now Millis, firsts, want int) int {
	b := p.RetryBudget
	if b == nil {
		return want
	}
	st.budgetWindow(b, now)
	allowed := int(math.Floor(b.Share*float64(st.BudgetFirsts+firsts)+1e-9)) + b.MinRetries
	return max(0, min(want, allowed-st.BudgetRetries))
}

// TookAttempts records firsts first attempts and retries retries started
// at now in the budget's window.
func (st *FlowState) TookAttempts(p FlowPolicy, now Millis, firsts, retries int) {
	b := p.RetryBudget
	if b == nil || firsts+retries == 0 {
		return
	}
	st.budgetWindow(b, now)
	st.BudgetFirsts += firsts
	st.BudgetRetries += retries
	st.UpdatedAt = now
}

// takeWithinBudget takes up to admit attempts of the group with take: all
// at once without a retry budget; with one, first attempts (execute_times
// = 0) first, then the retries the budget allows, and records both.
func (s *Store) takeWithinBudget(c FlowClaim, st *FlowState, admit int, scope string,
	take func(states []State, limit int, scope string) ([]*Task, error)) ([]*Task, error) {
	if c.Policy.RetryBudget == nil {
		return take(WaitingStates, admit, scope)
	}
	firsts, err := take(WaitingStates, admit, scope+" AND execute_times = 0")
	if err != nil {
		return nil, err
	}
	allow := st.RetryAllowance(c.Policy, c.Now, len(firsts), admit-len(firsts))
	retries, err := take(WaitingStates, allow, scope+" AND execute_times > 0")
	if err != nil {
		return nil, err
	}
	st.TookAttempts(c.Policy, c.Now, len(firsts), len(retries))
	return append(firsts, retries...), nil
}
