package runtime

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// Fair share between tenants (Config.TenantFairShare, docs/tenants-fair-share.md).
//
// Without it the claim takes due rows oldest first, so a tenant with a
// large backlog takes every free worker until its backlog is gone. With it
// the claim of this instance's shards shares its free workers among the
// tenants that have tasks due, by weight, as stride scheduling does: each
// tenant has a virtual time (its starts claimed here divided by its
// weight); each free worker goes to the tenant whose virtual time after
// one more start would be least, and each tenant's share is one claim
// limited to that tenant and to its tasks due from its oldest at the last
// read on (Store.ClaimTenant: the usual claim statement, with every gate,
// fence and lease it has). A tenant whose claim comes back short (fewer
// due rows than its share) leaves the rest to the others, and what no
// known tenant took goes to one plain claim (tenants whose tasks fell due
// since the last read): the claim is work-conserving. A tenant that starts
// having tasks due enters at the least virtual time of the tenants already
// sharing, so an idle spell earns no credit.
//
// Who has tasks due is read (Store.DueTenants, idx_state_name alone) at
// most once per PollInterval (and when the names claimed change); only the
// poller uses this state.

// maxTenantWeight is the largest Config.TenantWeights value.
const maxTenantWeight = 1000

// fairShare is the fair-share claim's state (the poller's alone).
type fairShare struct {
	due    []string           // tenants with tasks due at the last read, sorted; those whose claim came back short are removed
	readAt time.Time          // when due was read; zero: never
	names  []string           // the names due was read for (a handler registered since: read again)
	pass   map[string]float64 // virtual time of each tenant read as due: starts claimed / weight
	oldest map[string]Millis  // each tenant's oldest due task at the read: its claim starts there (Store.ClaimTenant)
}

// validateFair reports what is wrong with TenantFairShare and TenantWeights.
func (c Config) validateFair() error {
	if len(c.TenantWeights) > 0 && !c.TenantFairShare {
		return fmt.Errorf("argo: Config.TenantWeights is set but Config.TenantFairShare is false: weights apply only to the fair-share claim; set TenantFairShare: true, or drop TenantWeights")
	}
	for _, t := range slices.Sorted(maps.Keys(c.TenantWeights)) {
		w := c.TenantWeights[t]
		if err := checkTenant(t); err != nil {
			return fmt.Errorf("argo: Config.TenantWeights: %w", err)
		}
		if w < 1 || w > maxTenantWeight {
			return fmt.Errorf("argo: Config.TenantWeights[%q] is %d: a weight is a whole number from 1 to %d (a tenant not listed weighs 1); to stop claiming a tenant's tasks, leave it out of Config.Tenants", t, w, maxTenantWeight)
		}
		if c.Tenants != nil && !slices.Contains(c.Tenants, t) {
			return fmt.Errorf("argo: Config.TenantWeights weighs %q, which Config.Tenants leaves out: this instance never claims its tasks; add it to Tenants or drop its weight", t)
		}
	}
	return nil
}

// tenantWeight is tenant's weight: Config.TenantWeights, default 1.
func (c Config) tenantWeight(tenant string) float64 {
	if w, ok := c.TenantWeights[tenant]; ok {
		return float64(w)
	}
	return 1
}

// claimFair claims up to n due tasks of names in this instance's shards,
// shared among the tenants with tasks due by weight (see above). all says
// names are every name the instance claims (no TaskPriority tier): a
// tenant whose claim came back short is then left out until the next read.
func (rt *Runtime) claimFair(now time.Time, n int, names, every []string, all bool) ([]*Task, error) {
	if len(names) == 0 {
		return nil, nil // no handler here: nothing to claim, nothing to read
	}
	f := &rt.fair
	if f.readAt.IsZero() || now.Sub(f.readAt) >= rt.cfg.PollInterval || now.Before(f.readAt) || !slices.Equal(f.names, every) {
		due, err := rt.store.DueTenants(rt.ctx, toMillis(now), every, rt.cfg.Tenants)
		if err != nil {
			return nil, err
		}
		f.read(now, due)
		f.names = slices.Clone(every)
	}
	var out []*Task
	active := slices.Clone(f.due)
	for len(out) < n && len(active) > 0 {
		alloc := fairAllocate(active, f.pass, rt.cfg.tenantWeight, n-len(out))
		var short []string
		for _, t := range active {
			want := alloc[t]
			if want == 0 {
				continue
			}
			got, err := rt.store.ClaimTenant(rt.ctx, rt.cfg.InstanceID, toMillis(now), toMillis(now), toMillis(now.Add(rt.cfg.LeaseDuration)), want, rt.claimScope(names), t, f.oldest[t])
			f.pass[t] += float64(len(got)) / rt.cfg.tenantWeight(t)
			out = append(out, got...) // leased to this instance, error or not
			if err != nil {
				return rt.fairKept(out, err)
			}
			if len(got) < want {
				short = append(short, t)
			}
		}
		if len(short) == 0 {
			break
		}
		active = slices.DeleteFunc(active, func(t string) bool { return slices.Contains(short, t) })
		if all {
			f.due = slices.DeleteFunc(f.due, func(t string) bool { return slices.Contains(short, t) })
		}
	}
	if len(out) < n {
		// Work-conserving: the workers no known tenant took go to the
		// tasks of any tenant (those that fell due since the read).
		got, err := rt.store.ClaimScoped(rt.ctx, rt.cfg.InstanceID, toMillis(now), toMillis(now), toMillis(now.Add(rt.cfg.LeaseDuration)), n-len(out), rt.claimScope(names))
		for _, task := range got {
			if _, ok := f.pass[task.Tenant]; ok {
				f.pass[task.Tenant] += 1 / rt.cfg.tenantWeight(task.Tenant)
			}
		}
		out = append(out, got...)
		if err != nil {
			return rt.fairKept(out, err)
		}
	}
	return out, nil
}

// fairKept returns the tasks claimed before err (leased to this instance:
// they run; the next poll meets the error again), or err if none.
func (rt *Runtime) fairKept(out []*Task, err error) ([]*Task, error) {
	if len(out) == 0 {
		return nil, err
	}
	if rt.ctx.Err() == nil {
		rt.health.failed(rt, "claim", err)
	}
	return out, nil
}

// read records the tenants with tasks due at now. A tenant read again
// keeps its virtual time, raised to the least of those read again; one
// new to the set enters at that least time (0 when none is read again).
func (f *fairShare) read(now time.Time, due []storage.DueTenant) {
	floor := math.Inf(1)
	for _, d := range due {
		if p, ok := f.pass[d.Tenant]; ok {
			floor = min(floor, p)
		}
	}
	if math.IsInf(floor, 1) {
		floor = 0
	}
	pass := make(map[string]float64, len(due))
	oldest := make(map[string]Millis, len(due))
	f.due = f.due[:0]
	for _, d := range due {
		pass[d.Tenant] = max(f.pass[d.Tenant], floor)
		oldest[d.Tenant] = d.Oldest
		f.due = append(f.due, d.Tenant)
	}
	f.pass, f.oldest, f.readAt = pass, oldest, now
}

// fairAllocate shares n workers among tenants (sorted): each to the tenant
// whose virtual time after one more start (pass + starts/weight) is least,
// the first in tenant order on a tie.
func fairAllocate(tenants []string, pass map[string]float64, weight func(string) float64, n int) map[string]int {
	alloc := make(map[string]int, len(tenants))
	for range n {
		best, bestV := "", math.Inf(1)
		for _, t := range tenants {
			if v := pass[t] + float64(alloc[t]+1)/weight(t); v < bestV {
				best, bestV = t, v
			}
		}
		alloc[best]++
	}
	return alloc
}
