package storage

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
)

// DueTenant is one tenant with claimable tasks due: the due time of the
// earliest of them (of the names asked for).
type DueTenant struct {
	Tenant string `db:"tenant"`
	Oldest Millis `db:"oldest"`
}

// DueTenants returns the tenants that have a claimable task (pending,
// retrying or exhausted) of one of names due by now, limited to tenants
// when it is not nil, each once, in tenant order; the fair-share claim's
// read of who shares the workers (runtime/fair_share.go). It reads
// idx_state_name (task_status, task_id, tenant, execute_time, migration
// 000011) alone: on MySQL and MariaDB a loose index scan (one probe per
// state, name and tenant: "Using index for group-by"), on SQLite one range
// of the index per state and name. Held retries and leased rows of those
// states count (a tenant whose only due rows are held is seen, and its
// claim comes back short). No lock.
func (s *Store) DueTenants(ctx context.Context, now Millis, names, tenants []string) ([]DueTenant, error) {
	if len(names) == 0 || (tenants != nil && len(tenants) == 0) {
		return nil, nil
	}
	q, args := DueTenantsQuery(names, tenants)
	var rows []DueTenant
	if err := s.db.SelectContext(ctx, &rows, q, append(args, now)...); err != nil {
		return nil, fmt.Errorf("argo: fair share: read the tenants with tasks due: %w", err)
	}
	// One row per state, name and tenant: keep each tenant once, earliest.
	slices.SortFunc(rows, func(a, b DueTenant) int {
		return cmp.Or(strings.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Oldest, b.Oldest))
	})
	return slices.CompactFunc(rows, func(a, b DueTenant) bool { return a.Tenant == b.Tenant }), nil
}

// DueTenantsQuery is DueTenants' statement and its arguments but the last
// (now), for the plan checks.
func DueTenantsQuery(names, tenants []string) (string, []any) {
	nameIn, args := InList(names)
	cond := "task_status IN " + StateSet(StatePending, StateRetrying, StateExhausted) + " AND task_id IN " + nameIn
	cond, args = withTenants(cond, args, tenants)
	// GROUP BY the index's prefix, MIN of the next column: the loose scan.
	return "SELECT tenant, MIN(execute_time) AS oldest FROM argo_task WHERE " + cond +
		" GROUP BY task_status, task_id, tenant HAVING MIN(execute_time) <= ?", args
}

// ClaimTenant is ClaimScoped limited to one tenant's tasks due from
// dueFrom on (its oldest due task at the last DueTenants read; 0: no
// bound): the fair-share claim of one tenant's share. The bound starts the
// claim's range of the due index (idx_claim_due) at the tenant's first due
// row, not at the oldest due row of every tenant: without it a tenant whose
// tasks fall due after another's large backlog reads the whole backlog's
// index entries and rows to find its own. A row of the tenant due before
// dueFrom (put back as it was after the read) is left to the next read's
// claim. Every other condition, fence and lease is ClaimScoped's.
func (s *Store) ClaimTenant(ctx context.Context, owner string, now, dueBy, leaseUntil Millis, limit int, groups []ClaimGroup, tenant string, dueFrom Millis) ([]*Task, error) {
	one := make([]ClaimGroup, len(groups))
	for i, g := range groups {
		g.Tenants = []string{tenant}
		one[i] = g
	}
	scope, args := scopeCondition(one)
	if scope != "" && dueFrom > 0 {
		// The claim's due column (the driver's: idx_claim_due's).
		scope = "(" + s.sql.ClaimDueColumn + " >= ? AND " + scope + ")"
		args = append([]any{dueFrom}, args...)
	}
	return s.claimIn(ctx, owner, now, dueBy, leaseUntil, limit, scope, args)
}
