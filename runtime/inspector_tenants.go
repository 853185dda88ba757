package runtime

import "context"

// DeadLettersByTenant returns CountDeadLetters per tenant ("" for tasks
// submitted without one); a tenant without dead letters is absent.
func (in *Inspector) DeadLettersByTenant(ctx context.Context) (map[string]int, error) {
	return in.store.DeadLettersByTenant(ctx)
}

// CountByStateOfTenant is CountByState for the tasks of one tenant.
func (in *Inspector) CountByStateOfTenant(ctx context.Context, tenant string) (map[State]int, error) {
	return in.store.CountByStateOfTenant(ctx, tenant)
}
