package storage

import (
	"context"
	"fmt"
)

// DeadLettersByTenant returns CountDeadLetters per tenant ("" for tasks
// submitted without one); tenants with no dead letter are absent.
func (s *Store) DeadLettersByTenant(ctx context.Context) (map[string]int, error) {
	var rows []struct {
		Tenant string `db:"tenant"`
		N      int    `db:"n"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.sql.DeadLettersByTenant); err != nil {
		return nil, fmt.Errorf("argo: count dead letters per tenant: %w", err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Tenant] = r.N
	}
	return out, nil
}

// CountByStateOfTenant is CountByState for the tasks of one tenant.
func (s *Store) CountByStateOfTenant(ctx context.Context, tenant string) (map[State]int, error) {
	var rows []struct {
		State State `db:"task_status"`
		N     int   `db:"n"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.sql.CountByStateOfTenant, tenant); err != nil {
		return nil, fmt.Errorf("argo: count tasks of tenant %q: %w", tenant, err)
	}
	out := map[State]int{}
	for _, r := range rows {
		out[r.State] = r.N
	}
	return out, nil
}
