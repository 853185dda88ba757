package runtime

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Which tasks an instance works (docs/instance-scope.md): Config.TaskNames
// limits the names it claims and registers (the shard split counts it only
// for those), Config.Tenants limits its claims to some tenants (its row in
// argo_instance says so, and the split counts it only among instances with
// the same tenants), and Config.TaskPriority orders its claim by name.

// validateScope reports what is wrong with TaskNames, Tenants and
// TaskPriority.
func (c Config) validateScope() error {
	if c.TaskNames != nil && len(c.TaskNames) == 0 {
		return errors.New("argo: Config.TaskNames is empty but not nil: this instance would claim nothing; leave it nil for every name, or list the names to run")
	}
	for _, n := range c.TaskNames {
		if n == "" {
			return errors.New("argo: Config.TaskNames has an empty name: list task names as their directives name them")
		}
	}
	if c.Tenants != nil && len(c.Tenants) == 0 {
		return errors.New(`argo: Config.Tenants is empty but not nil: this instance would claim nothing; leave it nil for every tenant, or list the tenants ("" for tasks without one)`)
	}
	for _, t := range c.Tenants {
		if err := checkTenant(t); err != nil {
			return fmt.Errorf("argo: Config.Tenants: %w", err)
		}
		if strings.Contains(t, "\n") {
			return fmt.Errorf("argo: Config.Tenants: tenant %q contains a newline: use a tenant id without one", t)
		}
	}
	seen := map[string]bool{}
	for _, n := range c.TaskPriority {
		if seen[n] {
			return fmt.Errorf("argo: Config.TaskPriority lists %q twice: list each name once, highest first", n)
		}
		seen[n] = true
		if !c.worksName(n) {
			return fmt.Errorf("argo: Config.TaskPriority lists %q, which Config.TaskNames leaves out: add it to TaskNames or drop it from TaskPriority", n)
		}
	}
	return nil
}

// worksName reports whether Config.TaskNames lets this instance claim name.
func (c Config) worksName(name string) bool {
	return c.TaskNames == nil || slices.Contains(c.TaskNames, name)
}

// works reports whether this instance may run a task of name and tenant
// (it still needs a handler for the name).
func (rt *Runtime) works(name, tenant string) bool {
	return rt.cfg.worksName(name) && (rt.cfg.Tenants == nil || slices.Contains(rt.cfg.Tenants, tenant))
}

// sameTenants reports whether two instances' tenant limits are the same
// (nil: every tenant), whatever their order.
func sameTenants(a, b []string) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// claimScope is what to claim of names in this instance's shards, limited
// to Config.Tenants.
func (rt *Runtime) claimScope(names []string) []claimGroup {
	groups := rt.shards.claimScope(names)
	for i := range groups {
		groups[i].Tenants = rt.cfg.Tenants
	}
	return groups
}

// claimOwn claims up to n due tasks of names in this instance's shards:
// with Config.TaskPriority, one claim per listed name, highest first, then
// one for the names not listed, each taking what the ones before left of
// n; without it, one claim, oldest due first. With Config.TenantFairShare
// each of those claims is shared among tenants (fair_share.go).
func (rt *Runtime) claimOwn(now time.Time, n int, names []string) ([]*Task, error) {
	tiers := priorityTiers(names, rt.cfg.TaskPriority)
	var out []*Task
	for _, tier := range tiers {
		if len(out) >= n {
			break
		}
		var tasks []*Task
		var err error
		if rt.cfg.TenantFairShare { // fair_share.go: shared among tenants by weight
			tasks, err = rt.claimFair(now, n-len(out), tier, names, len(tiers) == 1)
		} else {
			tasks, err = rt.store.ClaimScoped(rt.ctx, rt.cfg.InstanceID, toMillis(now), toMillis(now), toMillis(now.Add(rt.cfg.LeaseDuration)), n-len(out), rt.claimScope(tier))
		}
		if err != nil {
			if len(out) == 0 {
				return nil, err
			}
			// Keep the tasks the tiers before took (they are leased to
			// this instance); the next poll meets the error again.
			if rt.ctx.Err() == nil {
				rt.health.failed(rt, "claim", err)
			}
			return out, nil
		}
		out = append(out, tasks...)
	}
	return out, nil
}

// priorityTiers splits names (sorted) into the claim's tiers: each name of
// priority that is in names, alone, in priority's order, then the rest.
func priorityTiers(names, priority []string) [][]string {
	if len(priority) == 0 {
		return [][]string{names}
	}
	var tiers [][]string
	for _, p := range priority {
		if slices.Contains(names, p) {
			tiers = append(tiers, []string{p})
		}
	}
	var rest []string
	for _, n := range names {
		if !slices.Contains(priority, n) {
			rest = append(rest, n)
		}
	}
	if len(rest) > 0 {
		tiers = append(tiers, rest)
	}
	return tiers
}
