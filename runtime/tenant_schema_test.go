package runtime

import (
	"context"
	"errors"
	"testing"
)

// TestTenantTraceMigrationDownUp: 000009's down file, as a DBA applies it,
// leaves a schema the check names 000009 for; its up file brings it back
// (a task written then carries its tenant), on both databases.
func TestTenantTraceMigrationDownUp(t *testing.T) {
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := freshStore(t, dsn)
		apply := func(file string) { t.Helper(); applyMigrationFile(t, ctx, s, file) }
		apply("000011_console_reads.down.sql") // down files in reverse order: 000011 indexes tenant
		apply("000009_tenant_trace.down.sql")
		var se *SchemaError
		if err := s.CheckSchema(ctx); !errors.As(err, &se) || se.Migration != "000009_tenant_trace.up.sql" {
			t.Fatalf("after the down file: %v, want a SchemaError naming 000009_tenant_trace.up.sql", err)
		}
		apply("000009_tenant_trace.up.sql")
		apply("000011_console_reads.up.sql")
		if err := s.CheckSchema(ctx); err != nil {
			t.Fatalf("after the up file: %v", err)
		}
		task := &Task{Name: "t", State: StatePending, MaxAttempts: 1, Parameter: "{}", Tenant: "acme"}
		if err := s.Insert(ctx, nil, task); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get(ctx, task.ID); err != nil || got.Tenant != "acme" {
			t.Fatalf("after the up file, a task reads back tenant %v, %v; want acme", got, err)
		}
	})
}
