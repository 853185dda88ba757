package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// FlowControl protects the downstream a task calls, across every instance
// (docs/flow-control.md): a concurrency cap, a rate limit and a circuit
// breaker, each shared by the tasks of one group. The directive keys
// limit=, rate= and breaker= set it; the zero value of each field turns
// that control off. The state is one argo_flow row per group, taken in the
// claim's transaction; tasks without FlowControl are claimed as before, at
// no cost.
//
// A task with FlowControl always starts through the poller's gated claim:
// its first attempt is not run inside Submit (Sync is treated as Async),
// and its retries are not held by their instance.
type FlowControl struct {
	// Group names the downstream the tasks share (a printer, a partner's
	// API): tasks with the same Group share its cap, rate and breaker, and
	// must declare the same values. "" means the task's own name.
	Group string
	// Limit is the most attempts of the group running at once across the
	// cluster; 0: no cap.
	Limit int
	// Rate is the most attempts of the group started per second across the
	// cluster, and Burst how many may start at once after a quiet spell
	// (0: max(1, Rate)); 0: no rate limit.
	Rate  float64
	Burst int
	// Breaker, if set, is the group's circuit breaker.
	Breaker *Breaker
	// RetryBudget, if set, bounds the group's retries by its first
	// attempts (directive key retry-budget=).
	RetryBudget *RetryBudget
}

// Breaker is a group's circuit breaker, shared by every instance: after
// Failures failed attempts within Window (and, if Ratio > 0, at least that
// share of the window's attempts), it opens: no attempt of the group starts
// anywhere and the tasks wait without using attempts. After Cooldown one
// probe attempt runs: its success closes the breaker, its failure reopens it
// with the cool-down doubled (up to MaxCooldown). On closing, the waiting
// tasks are released at ReleaseRate per second, not all at once, until
// those held back have drained (at least for ReleaseFor). A failure is any failed attempt except a permanent error (the
// downstream answered: that counts as a success, and closes it when it is
// the probe's). argoctl
// flow open/close opens and closes a breaker by hand.
type Breaker struct {
	Failures int     // default DefaultBreakerFailures
	Ratio    float64 // 0 (default): the count alone opens it
	// Window defaults to DefaultBreakerWindow; Cooldown to
	// DefaultBreakerCooldown; MaxCooldown to DefaultBreakerMaxCooldown.
	Window, Cooldown, MaxCooldown time.Duration
	// ProbeTimeout is how long a probe may stay unreported (its instance
	// died) before another starts; default DefaultBreakerProbeTimeout.
	ProbeTimeout time.Duration
	// ReleaseRate bounds the starts per second after the breaker closes
	// (no burst); default DefaultBreakerReleaseRate. A group's Rate, if
	// lower, applies instead.
	ReleaseRate float64
	// ReleaseFor is the release's minimum length; default
	// DefaultBreakerReleaseFor. Past it the release goes on while tasks
	// that were already due when the breaker closed still wait, so a
	// backlog larger than ReleaseRate × ReleaseFor (or a release slowed by
	// load) still drains at ReleaseRate rather than starting at once; tasks
	// due after the close do not prolong it.
	ReleaseFor time.Duration
}

// The breaker's defaults.
const (
	DefaultBreakerFailures     = 5
	DefaultBreakerWindow       = 30 * time.Second
	DefaultBreakerCooldown     = 30 * time.Second
	DefaultBreakerMaxCooldown  = 10 * time.Minute
	DefaultBreakerProbeTimeout = time.Minute
	DefaultBreakerReleaseRate  = 10.0
	DefaultBreakerReleaseFor   = 30 * time.Second
)

// group is the flow group's name.
func (f *FlowControl) group(task string) string {
	if f.Group != "" {
		return f.Group
	}
	return task
}

// validate reports what is wrong with f.
func (f *FlowControl) validate() error {
	if f == nil {
		return nil
	}
	switch {
	case len(f.Group) > 255:
		return fmt.Errorf("flow group %q is longer than 255 bytes", f.Group)
	case f.Limit < 0:
		return fmt.Errorf("flow control: negative limit %d", f.Limit)
	case f.Rate < 0 || math.IsNaN(f.Rate) || math.IsInf(f.Rate, 0):
		return fmt.Errorf("flow control: rate %v is not a positive number of attempts per second", f.Rate)
	case f.Burst < 0:
		return fmt.Errorf("flow control: negative burst %d", f.Burst)
	case f.Burst > 0 && f.Rate == 0:
		return errors.New("flow control: burst without a rate")
	}
	if b := f.Breaker; b != nil {
		switch {
		case b.Failures < 0:
			return fmt.Errorf("breaker: negative failures %d", b.Failures)
		case b.Ratio < 0 || b.Ratio > 1 || math.IsNaN(b.Ratio):
			return fmt.Errorf("breaker: ratio %v is not between 0 and 1", b.Ratio)
		case b.Window < 0 || b.Cooldown < 0 || b.MaxCooldown < 0 || b.ProbeTimeout < 0 || b.ReleaseFor < 0:
			return errors.New("breaker: negative duration")
		case b.ReleaseRate < 0 || math.IsNaN(b.ReleaseRate) || math.IsInf(b.ReleaseRate, 0):
			return fmt.Errorf("breaker: release rate %v is not a positive number per second", b.ReleaseRate)
		}
	}
	if err := f.RetryBudget.validate(); err != nil {
		return err
	}
	return nil
}

// policy is f with defaults, as the store applies it.
func (f *FlowControl) policy() storage.FlowPolicy {
	p := storage.FlowPolicy{Limit: f.Limit, Rate: f.Rate, Burst: f.Burst}
	if b := f.Breaker; b != nil {
		or := func(d, def time.Duration) int64 {
			if d == 0 {
				d = def
			}
			return d.Milliseconds()
		}
		failures, release := b.Failures, b.ReleaseRate
		if failures == 0 {
			failures = DefaultBreakerFailures
		}
		if release == 0 {
			release = DefaultBreakerReleaseRate
		}
		p.Breaker = &storage.BreakerPolicy{
			Failures: failures, Ratio: b.Ratio, WindowMs: or(b.Window, DefaultBreakerWindow),
			CooldownMs: or(b.Cooldown, DefaultBreakerCooldown), MaxCooldownMs: or(b.MaxCooldown, DefaultBreakerMaxCooldown),
			ProbeTimeoutMs: or(b.ProbeTimeout, DefaultBreakerProbeTimeout),
			ReleaseRate:    release, ReleaseForMs: or(b.ReleaseFor, DefaultBreakerReleaseFor),
		}
	}
	if b := f.RetryBudget; b != nil {
		p.RetryBudget = b.policy()
	}
	return p
}

// checkFlowGroups reports defs whose group another def (of defs, or
// registered already) declares with other values.
func (rt *Runtime) checkFlowGroups(defs []*TaskDef) error {
	seen := map[string]*TaskDef{}
	rt.mu.RLock()
	for _, d := range rt.handlers {
		if d.Flow != nil && !slices.Contains(defs, d) {
			seen[d.Flow.group(d.Name)] = d
		}
	}
	rt.mu.RUnlock()
	var errs []error
	for _, d := range defs {
		if d.Flow == nil {
			continue
		}
		g := d.Flow.group(d.Name)
		if o, ok := seen[g]; ok && o.Name != d.Name && !reflect.DeepEqual(o.Flow.policy(), d.Flow.policy()) {
			errs = append(errs, fmt.Errorf("argo: task %s: flow group %q is declared by task %s with other values (limit, rate, burst, breaker, retry budget): declare them once, the same for every task of the group", d.Name, g, o.Name))
			continue
		}
		seen[g] = d
	}
	return errors.Join(errs...)
}

// flowGroup is one group this instance claims: its names here and policy.
type flowGroup struct {
	name   string
	names  []string
	policy storage.FlowPolicy
}

// splitFlow separates names into those claimed plainly and the flow groups.
func (rt *Runtime) splitFlow(names []string) (plain []string, groups []flowGroup) {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	at := map[string]int{}
	for _, n := range names {
		d := rt.handlers[n]
		if d == nil || d.Flow == nil {
			plain = append(plain, n)
			continue
		}
		g := d.Flow.group(n)
		i, ok := at[g]
		if !ok {
			i = len(groups)
			at[g] = i
			groups = append(groups, flowGroup{name: g, policy: d.Flow.policy()})
		}
		groups[i].names = append(groups[i].names, n)
	}
	return plain, groups
}

// flowWakes remembers, per group, when its last gated claim said it may
// admit again (a rate limit's next batch of tokens, the end of a breaker's
// cool-down): the poller skips the group until then instead of running a
// transaction that admits nothing, for at most a poll interval. Pokes (a
// worker freed) do not bring the claim forward.
type flowWakes struct {
	mu   sync.Mutex
	next map[string]time.Time
	// busy: the group's last gated claim here took tasks (the next one
	// skips the read that spares an idle group its transaction).
	busy map[string]bool
	// grants: the end of this instance's slot grant per group, on the
	// database's clock (storage/flow_grants.go); 0 or absent: none.
	grants map[string]Millis
}

// Slot grants (storage/flow_grants.go): how long a grant lasts, and when
// its holder stops using it.
const (
	// flowGrantFor is a grant's length. An operator's open, or a group
	// nearing its cap, takes effect on a holder at its next renewal.
	flowGrantFor = 3 * time.Second
	// flowGrantRenew: a holder claims without the lock only while more than
	// this is left of its grant; after that its claims are locked ones,
	// each renewing the grant (about once a second while the group is
	// busy). Other instances judge the grant's end on their own reading of
	// the database's clock (clock.go refuses readings whose round trip is
	// over a second), and a plain claim sent just before the holder stopped
	// must have taken its rows by then: both fit in this margin.
	flowGrantRenew = 2 * time.Second
)

// grant is the end of this instance's grant of group (0: none).
func (w *flowWakes) grant(group string) Millis {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.grants[group]
}

func (w *flowWakes) setGrant(group string, until Millis) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.grants == nil {
		w.grants = map[string]Millis{}
	}
	w.grants[group] = until
}

func (w *flowWakes) isBusy(group string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.busy[group]
}

func (w *flowWakes) setBusy(group string, busy bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.busy == nil {
		w.busy = map[string]bool{}
	}
	w.busy[group] = busy
}

func (w *flowWakes) due(group string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !now.Before(w.next[group])
}

func (w *flowWakes) set(group string, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.next == nil {
		w.next = map[string]time.Time{}
	}
	w.next[group] = at
}

// dropGrants gives up this instance's live slot grants (Stop, once it
// claims no more), so that the other instances need not wait for them to
// run out. A failure is only logged: the grants run out by themselves.
func (rt *Runtime) dropGrants(ctx context.Context) {
	rt.flow.mu.Lock()
	var groups []string
	now := toMillis(rt.now())
	for g, until := range rt.flow.grants {
		if until > now {
			groups = append(groups, g)
		}
	}
	rt.flow.mu.Unlock()
	slices.Sort(groups)
	for _, g := range groups {
		if err := rt.store.DropFlowGrant(ctx, g, rt.cfg.InstanceID, now); err != nil {
			rt.log.Warn("argo: slot grant not given back at Stop (it runs out by itself)", "group", g, "error", err)
			continue
		}
		rt.flow.setGrant(g, 0)
	}
}

// claimGranted moves the groups this instance holds a live slot grant of
// (storage/flow_grants.go) from groups to the plainly claimed names: their
// tasks are claimed with the plain names' in one read, without the group's
// lock (this instance's workers bound what it runs, and the grant reserves
// them). Past flowGrantRenew before its end, a grant is left to the gated
// claim, which renews it.
func (rt *Runtime) claimGranted(names []string, groups []flowGroup, now time.Time) ([]string, []flowGroup) {
	var gated []flowGroup
	var granted []string
	for _, g := range groups {
		if g.policy.Grantable() && rt.flow.grant(g.name).Time().Sub(now) > flowGrantRenew {
			granted = append(granted, g.names...)
			continue
		}
		gated = append(gated, g)
	}
	if len(granted) > 0 {
		names = slices.Sorted(slices.Values(append(slices.Clone(names), granted...)))
	}
	return names, gated
}

// claimFlow claims up to n tasks of the flow groups, each through its
// gated claim, starts each group's tasks as soon as they are taken (on
// workers the caller reserved), returns how many it started, and schedules
// a poll for when a group may admit more. A gated claim that waits longer
// than flowClaimWait skips its group for as long (claim_flow_wait.go).
func (rt *Runtime) claimFlow(groups []flowGroup, n int, now time.Time) (int, error) {
	started := 0
	for _, g := range groups {
		if started >= n {
			break
		}
		if !rt.flow.due(g.name, now) {
			continue
		}
		c := storage.FlowClaim{
			Group: g.name, Names: g.names, Policy: g.policy, Owner: rt.cfg.InstanceID,
			Now: toMillis(now), LeaseUntil: toMillis(now.Add(rt.cfg.LeaseDuration)), Limit: n - started,
			Busy: rt.flow.isBusy(g.name), Tenants: rt.cfg.Tenants,
		}
		if g.policy.Grantable() {
			// This instance never runs more attempts at once than Workers.
			c.GrantSlots, c.GrantUntil = rt.cfg.Workers, toMillis(now.Add(flowGrantFor))
		}
		wait := flowClaimWait(rt.cfg.LeaseDuration)
		ctx, cancel := context.WithTimeout(rt.ctx, wait)
		r, err := rt.store.ClaimFlow(ctx, c)
		waited := rt.flowClaimWaited(ctx, err)
		cancel()
		rt.flow.setBusy(g.name, err == nil && len(r.Tasks) > 0)
		if g.policy.Grantable() {
			// A failed claim ends the grant here too: its commit may have
			// dropped the grant in the row (an unknown outcome), and the
			// others then no longer count it.
			rt.flow.setGrant(g.name, r.GrantUntil)
		}
		if waited {
			rt.log.Warn("argo: flow group's claim waited too long (another session holds the group's lock); the group is skipped meanwhile, the other claims go on", "group", g.name, "waited", wait, "skipped_for", wait, "error", err)
			rt.flow.set(g.name, now.Add(2*wait)) // from the claim's start: skipped for wait after it
			continue
		}
		if err != nil {
			return started, fmt.Errorf("flow group %s: %w", g.name, err)
		}
		// Skip the group until it may admit, for at most a poll interval (an
		// operator's close, another instance's probe, take effect by then).
		skip := r.WakeAt.Time()
		if limit := now.Add(rt.cfg.PollInterval); skip.After(limit) {
			skip = limit
		}
		rt.flow.set(g.name, skip)
		if r.WakeAt > 0 {
			rt.scheduleWake(r.WakeAt.Time())
		}
		started += rt.startClaimed(r.Tasks)
	}
	return started, nil
}

// flowOutcome reports an attempt's outcome to its group's breaker.
func (rt *Runtime) flowOutcome(h *TaskDef, t *Task, ok bool) {
	if h == nil || h.Flow == nil || h.Flow.Breaker == nil {
		return
	}
	g := h.Flow.group(t.Name)
	ctx, cancel := context.WithTimeout(context.Background(), rt.cfg.LeaseDuration)
	defer cancel()
	st, err := rt.store.FlowOutcome(ctx, g, h.Flow.policy(), t.ID, ok, toMillis(rt.now()))
	if err != nil {
		rt.log.Warn("argo: attempt outcome not reported to the flow group's breaker", "group", g, "task_id", t.ID, "error", err)
		return
	}
	if st == storage.BreakerOpen && !ok {
		rt.log.Debug("argo: flow group's breaker open", "group", g, "task_id", t.ID)
	}
}
