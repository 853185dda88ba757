package storage

import (
	"context"
	"strings"
)

// Instance is one row of argo_instance: a live (or recently live) runtime
// and the task names it has handlers for.
type Instance struct {
	ID    string   `db:"instance_id"`
	Names []string `db:"-"`
}

// RecordHeartbeat records that instance id is alive at now with handlers
// for names: its row is updated, or inserted when missing (a concurrent
// insert of the same row is no error).
func (s *Store) RecordHeartbeat(ctx context.Context, id string, names []string, now Millis) error {
	joined := strings.Join(names, "\n")
	n, err := s.exec(ctx, s.sql.UpdateInstance, now, joined, id)
	if err != nil {
		return err
	}
	if n == 0 {
		if _, err := s.exec(ctx, s.sql.InsertInstance, id, now, now, joined); err != nil && !s.d.IsDuplicate(err) {
			return err
		}
	}
	return nil
}

// LiveInstances returns the instances that heartbeated at cutoff or later,
// by id.
func (s *Store) LiveInstances(ctx context.Context, cutoff Millis) ([]Instance, error) {
	var rows []struct {
		ID    string `db:"instance_id"`
		Names string `db:"task_names"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.sql.LiveInstances, cutoff); err != nil {
		return nil, err
	}
	out := make([]Instance, len(rows))
	for i, r := range rows {
		out[i] = Instance{ID: r.ID, Names: strings.Split(r.Names, "\n")}
	}
	return out, nil
}

// RemoveInstance deletes the row of instance id (it is stopping: the
// others take its shards without waiting for it to time out).
func (s *Store) RemoveInstance(ctx context.Context, id string) error {
	_, err := s.exec(ctx, s.sql.DeleteInstance, id)
	return err
}
