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
