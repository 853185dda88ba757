package storage

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// budgetUncountFirst takes one first attempt back out of a group's retry
// budget count, if the window it was counted in (its claim's time, the
// second argument) is still the current one. It writes the group's row
// like a claim does (lock_seq + 1), so that on Galera it conflicts at
// certification with a claim on another node rather than being lost.
const budgetUncountFirst = "UPDATE argo_flow SET lock_seq = lock_seq + 1, budget_firsts = budget_firsts - 1" +
	" WHERE group_name = ? AND budget_firsts > 0 AND budget_start <= ?"

// GiveBackFirst writes f, the give-back of a first attempt of a task of
// flow group group that has a retry budget (f.UndoAttempt: the task goes
// back to pending with no attempt, so its next claim counts it as a first
// attempt again), and in the same transaction takes it back out of the
// budget's count of first attempts — counted by its claim at claimedAt,
// if that window is still current (else the next claim counts it in
// another window, once). A call given back is thus counted once, when it
// runs, however often it was given back. ErrLeaseLost if f's fence no
// longer holds; then nothing is written.
func (s *Store) GiveBackFirst(ctx context.Context, f Finishing, group string, claimedAt, now Millis) error {
	if err := checkTransition(f.ID, f.From, f.To); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sqlx.Tx) error {
		q, args := FinishStatement(s.sql, f, now)
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrLeaseLost
		}
		_, err = tx.ExecContext(ctx, budgetUncountFirst, group, claimedAt)
		return err
	})
}
