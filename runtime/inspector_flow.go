package runtime

import (
	"context"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// FlowGroup is the shared state of one flow group (docs/flow-control.md),
// as argo_flow holds it.
type FlowGroup struct {
	Group string
	// Members are the task names of the group, as the instances declared them.
	Members []string
	// Breaker is "closed", "open", "half-open" (one probe out) or
	// "forced-open" (opened by an operator).
	Breaker string
	// Until is the end of an open breaker's cool-down, or a half-open
	// breaker's probe deadline (zero otherwise).
	Until time.Time
	// Cooldown is the open breaker's current cool-down.
	Cooldown time.Duration
	// WindowOK and WindowFailed count the attempts of the breaker's window.
	WindowOK, WindowFailed int
	// Opened counts the times the breaker opened.
	Opened int
	// Tokens are the rate limit's bucket as last written.
	Tokens  float64
	Updated time.Time
	// Grants are the live slot grants of the group's concurrency cap: the
	// instances claiming its tasks without the group's lock while the cap
	// is far from binding (docs/flow-control.md, "Slot grants").
	Grants []FlowSlotGrant
}

// FlowSlotGrant is one instance's slot grant: it may run up to Slots of the
// group's attempts (its workers) without the group's lock until Until.
type FlowSlotGrant struct {
	Instance string
	Slots    int
	Until    time.Time
}

// FlowGroups returns the state of every flow group, by name.
func (in *Inspector) FlowGroups(ctx context.Context) ([]FlowGroup, error) {
	rows, err := in.store.FlowGroups(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]FlowGroup, len(rows))
	for i, r := range rows {
		g := FlowGroup{Group: r.Group, Members: r.MemberNames(), Breaker: r.Breaker.String(),
			Cooldown: time.Duration(r.CooldownMs) * time.Millisecond, WindowOK: r.WindowOK, WindowFailed: r.WindowFailed,
			Opened: r.OpenedCount, Tokens: r.Tokens}
		if r.BreakerUntil > 0 {
			g.Until = r.BreakerUntil.Time()
		}
		if r.UpdatedAt > 0 {
			g.Updated = r.UpdatedAt.Time()
		}
		for _, gr := range r.FlowGrants() {
			if gr.Until.Time().After(in.now()) {
				g.Grants = append(g.Grants, FlowSlotGrant{Instance: gr.Owner, Slots: gr.Slots, Until: gr.Until.Time()})
			}
		}
		out[i] = g
	}
	return out, nil
}

// OpenBreaker opens a flow group's breaker by hand, as in.Operator, with
// an optional reason (both recorded: FlowTrail): no attempt of the group
// starts on any instance (its tasks wait, without using attempts) until
// CloseBreaker. The group must exist (an instance running one of its tasks
// has claimed once).
func (in *Inspector) OpenBreaker(ctx context.Context, group, reason string) error {
	return in.store.SetBreaker(ctx, group, true, in.operator(), reason, storage.ToMillis(in.now()))
}

// CloseBreaker closes a flow group's breaker by hand, as in.Operator, with
// an optional reason (both recorded: FlowTrail); the waiting tasks are
// released at the breaker's release rate, as after a successful probe.
func (in *Inspector) CloseBreaker(ctx context.Context, group, reason string) error {
	return in.store.SetBreaker(ctx, group, false, in.operator(), reason, storage.ToMillis(in.now()))
}

// FlowTrail returns the operator trail of a flow group, oldest first: each
// time its breaker was opened or closed by hand (ActionBreakerOpen,
// ActionBreakerClose), with who, when and why.
func (in *Inspector) FlowTrail(ctx context.Context, group string) ([]OperatorAction, error) {
	return in.store.FlowActions(ctx, group)
}
