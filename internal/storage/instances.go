package storage

import (
	"context"
	"database/sql"
	"strings"
)

// Instance is one row of argo_instance: a live (or recently live) runtime
// and the task names it has handlers for.
type Instance struct {
	ID    string   `db:"instance_id"`
	Names []string `db:"-"`
	// Tenants are the tenants the instance is limited to; nil: every
	// tenant (instance_scope.go).
	Tenants []string `db:"-"`
}

// RecordHeartbeat records that instance id is alive at now with handlers
// for names, for every tenant (RecordInstance).
func (s *Store) RecordHeartbeat(ctx context.Context, id string, names []string, now Millis) error {
	return s.RecordInstance(ctx, id, names, nil, now)
}

// RecordInstance records that instance id is alive at now with handlers
// for names, limited to tenants (nil: every tenant): its row is updated, or
// inserted when missing (a concurrent insert of the same row is no error).
// The heartbeater uses RecordInstanceSeen (instance_cancel.go), which also
// reports the cancels of tasks the instance runs.
func (s *Store) RecordInstance(ctx context.Context, id string, names, tenants []string, now Millis) error {
	_, err := s.RecordInstanceSeen(ctx, id, names, tenants, now, 0)
	return err
}

// LiveInstances returns the instances that heartbeated at cutoff or later,
// by id.
func (s *Store) LiveInstances(ctx context.Context, cutoff Millis) ([]Instance, error) {
	var rows []struct {
		ID      string         `db:"instance_id"`
		Names   string         `db:"task_names"`
		Tenants sql.NullString `db:"tenants"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.sql.LiveInstances, cutoff); err != nil {
		return nil, err
	}
	out := make([]Instance, len(rows))
	for i, r := range rows {
		out[i] = Instance{ID: r.ID, Names: strings.Split(r.Names, "\n"), Tenants: DecodeTenantScope(r.Tenants)}
	}
	return out, nil
}

// RemoveInstance deletes the row of instance id (it is stopping: the
// others take its shards without waiting for it to time out).
func (s *Store) RemoveInstance(ctx context.Context, id string) error {
	_, err := s.exec(ctx, s.sql.DeleteInstance, id)
	return err
}
