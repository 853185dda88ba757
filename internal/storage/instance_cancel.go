package storage

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/jmoiron/sqlx"
)

// How a cancel reaches the instance running the attempt within a heartbeat
// (migration 000018, docs/cancel.md): the cancel of a running task adds 1
// to argo_instance.cancel_seq of the task's lease owner in the cancel's own
// transaction, and every heartbeat's UPDATE is fenced on the cancel_seq its
// instance last saw. In steady state the heartbeat is still one statement;
// when a cancel moved the counter it changes no row, and the row is read:
// the new value is reported, and the runtime renews its leases at once
// (the renewal routes the cancelled lease: ExtendLeasesCancel).

// Statements of this file (portable: the same on both engines).
const (
	instanceCancelSeqSQL  = "SELECT cancel_seq FROM argo_instance WHERE instance_id = ?"
	bumpInstanceCancelSQL = "UPDATE argo_instance SET cancel_seq = cancel_seq + 1 WHERE instance_id = ?"
	// recordInstanceSQL is the heartbeat not fenced, run once the row's
	// cancel_seq has been read after the fenced one changed no row.
	recordInstanceSQL = "UPDATE argo_instance SET heartbeat_at = ?, task_names = ?, tenants = ? WHERE instance_id = ?"
)

// RecordInstanceSeen records that instance id is alive at now with
// handlers for names, limited to tenants (nil: every tenant), as
// RecordInstance does, fenced on seen, the instance's cancel_seq as its
// last heartbeat returned it (0 at first). It returns the row's cancel_seq:
// seen in steady state (one statement); a different value when a cancel of
// a task running under one of the instance's leases committed since (the
// caller should renew its leases now) or when the row was missing and is
// inserted (0). A concurrent insert of the same row is no error.
func (s *Store) RecordInstanceSeen(ctx context.Context, id string, names, tenants []string, now Millis, seen int64) (int64, error) {
	joined, scope := strings.Join(names, "\n"), EncodeTenantScope(tenants)
	n, err := s.exec(ctx, s.sql.UpdateInstance, now, joined, scope, id, seen)
	if err != nil {
		return seen, err
	}
	if n > 0 {
		return seen, nil
	}
	// No row changed: the row is missing, or a cancel moved its counter
	// (or, on a MySQL connection counting changed rows rather than matched
	// ones, the heartbeat wrote the same values again).
	seq, found, err := s.instanceCancelSeq(ctx, id)
	if err != nil {
		return seen, err
	}
	if found {
		if seq != seen {
			if _, err := s.exec(ctx, recordInstanceSQL, now, joined, scope, id); err != nil {
				return seen, err
			}
		}
		return seq, nil
	}
	if _, err := s.exec(ctx, s.sql.InsertInstance, id, now, now, joined, scope); err != nil {
		if !s.d.IsDuplicate(err) {
			return seen, err
		}
		// A concurrent first heartbeat inserted it: its value stands.
		if seq, found, err = s.instanceCancelSeq(ctx, id); err != nil || !found {
			return seen, err
		}
		return seq, nil
	}
	return 0, nil
}

// InstanceCancelSeq reads the cancel_seq of instance id (found false if it
// has no row).
func (s *Store) InstanceCancelSeq(ctx context.Context, id string) (seq int64, found bool, err error) {
	return s.instanceCancelSeq(ctx, id)
}

func (s *Store) instanceCancelSeq(ctx context.Context, id string) (int64, bool, error) {
	var seq int64
	err := s.db.GetContext(ctx, &seq, instanceCancelSeqSQL, id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return seq, err == nil, err
}

// bumpCancelSeq adds 1 to the cancel_seq of instance owner, in tx (the
// cancel of a task running under owner's lease). An owner without a row
// (stopped, or timed out and removed) changes nothing: no heartbeat of it
// is waiting for the news.
func (s *Store) bumpCancelSeq(ctx context.Context, tx *sqlx.Tx, owner string) error {
	_, err := tx.ExecContext(ctx, bumpInstanceCancelSQL, owner)
	return err
}
