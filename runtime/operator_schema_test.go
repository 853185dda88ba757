package runtime

import (
	"context"
	"errors"
	"testing"
)

// TestSchemaCheckWantsOperatorTrail: a schema without one of the things
// migration 000005 adds (the requeue links, the trail table, the discard
// requests table) fails the schema check naming 000005, on both databases;
// migrating again brings it back.
func TestSchemaCheckWantsOperatorTrail(t *testing.T) {
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		for _, drop := range []string{
			"ALTER TABLE argo_task DROP COLUMN requeued_to",
			"DROP TABLE argo_operator_action",
			"DROP TABLE argo_discard_request",
		} {
			s := freshStore(t, dsn)
			if err := s.CheckSchema(ctx); err != nil {
				t.Fatalf("migrated schema: %v", err)
			}
			if _, err := s.DB().ExecContext(ctx, drop); err != nil {
				t.Fatal(err)
			}
			var se *SchemaError
			if err := s.CheckSchema(ctx); !errors.As(err, &se) || se.Migration != "000005_operator_trail.up.sql" {
				t.Fatalf("after %s: %v, want a SchemaError naming 000005_operator_trail.up.sql", drop, err)
			}
		}
	})
}

// TestOperatorTrailMigrationDownUp: 000005's down file, as a DBA applies
// it, leaves a schema the check names 000005 for, and its up file brings
// it back, with 000014 and 000022 (which add columns to its tables), on
// both databases.
func TestOperatorTrailMigrationDownUp(t *testing.T) {
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := freshStore(t, dsn)
		apply := func(file string) { t.Helper(); applyMigrationFile(t, ctx, s, file) }
		apply("000005_operator_trail.down.sql")
		var se *SchemaError
		if err := s.CheckSchema(ctx); !errors.As(err, &se) || se.Migration != "000005_operator_trail.up.sql" {
			t.Fatalf("after the down file: %v, want a SchemaError naming 000005_operator_trail.up.sql", err)
		}
		apply("000005_operator_trail.up.sql")
		// The table came back as 000005 made it: 000014's column on it is
		// the next file to apply.
		if err := s.CheckSchema(ctx); !errors.As(err, &se) || se.Migration != "000014_breaker_trail.up.sql" {
			t.Fatalf("after the up file: %v, want a SchemaError naming 000014_breaker_trail.up.sql", err)
		}
		apply("000014_breaker_trail.up.sql")
		// And 000022's accounts on both of its tables after that.
		if err := s.CheckSchema(ctx); !errors.As(err, &se) || se.Migration != "000022_operator_accounts.up.sql" {
			t.Fatalf("after 000014's up file: %v, want a SchemaError naming 000022_operator_accounts.up.sql", err)
		}
		apply("000022_operator_accounts.up.sql")
		if err := s.CheckSchema(ctx); err != nil {
			t.Fatalf("after 000005's, 000014's and 000022's up files: %v", err)
		}
	})
}
