package storage

import (
	"context"
	"fmt"
	"time"
)

// BacklogCount is one line of a backlog read: the claimable tasks
// (pending, retrying, exhausted) of a task name or tenant due by now, and
// the due time of the earliest of them.
type BacklogCount struct {
	Name   string `db:"name"`
	N      int    `db:"n"`
	Oldest Millis `db:"oldest"`
}

// BacklogHeld counts the retries one task name and tenant has held by
// instances (retrying, lease running: the instance starts them itself).
type BacklogHeld struct {
	Task   string `db:"task_id"`
	Tenant string `db:"tenant"`
	N      int    `db:"n"`
}

// BacklogRead is what Backlog reads.
type BacklogRead struct {
	// ByTask: every task name with a task due, in no order.
	ByTask []BacklogCount
	// ByTenant: the tenants with the most tasks due, at most the limit
	// given to Backlog, the most first; TenantsCut is set when more
	// tenants had tasks due.
	ByTenant   []BacklogCount
	TenantsCut bool
	// Held: the held retries per task name and tenant.
	Held []BacklogHeld
}

// Backlog reads the due tasks per task name and per tenant (the
// tenantLimit tenants with the most, at least 1) and the held retries as
// of now: three statements on indexes (see the drivers'
// backlog_statements.go), no lock.
func (s *Store) Backlog(ctx context.Context, now time.Time, tenantLimit int) (BacklogRead, error) {
	var out BacklogRead
	at := ToMillis(now)
	if err := s.db.SelectContext(ctx, &out.ByTask, s.sql.BacklogDueByTask, at); err != nil {
		return out, fmt.Errorf("argo: backlog: due tasks per name: %w", err)
	}
	tenantLimit = max(tenantLimit, 1)
	if err := s.db.SelectContext(ctx, &out.ByTenant, s.sql.BacklogDueByTenant, at, tenantLimit+1); err != nil {
		return out, fmt.Errorf("argo: backlog: due tasks per tenant: %w", err)
	}
	if len(out.ByTenant) > tenantLimit {
		out.ByTenant, out.TenantsCut = out.ByTenant[:tenantLimit], true
	}
	if err := s.db.SelectContext(ctx, &out.Held, s.sql.BacklogHeld, at); err != nil {
		return out, fmt.Errorf("argo: backlog: held retries: %w", err)
	}
	return out, nil
}

// BacklogStatements returns the statements Backlog runs (due per task
// name, due per tenant, held), for the conformance suite's plan checks.
func (s *Store) BacklogStatements() (dueByTask, dueByTenant, held string) {
	return s.sql.BacklogDueByTask, s.sql.BacklogDueByTenant, s.sql.BacklogHeld
}
