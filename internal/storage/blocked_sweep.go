package storage

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/jmoiron/sqlx"
)

// The backstop of dependency releases (maintenance.BlockedSweeper,
// docs/dependencies.md). A blocked task is released (or skipped) in the
// transaction that settles its last upstream task. Where that can be lost
// — two settles on two nodes of a multi-writer Galera cluster that
// certification let both commit, a dependent submit on one node racing its
// upstream task's finish on another — the sweeper finds the blocked tasks
// whose upstream tasks have all ended and settles them as the finish would
// have. It reads only blocked rows (idx_retention: task_status,
// gmt_modified), in bounded batches, and nothing in the submit, claim or
// finish path of any task.

// BlockedCursor is a position in the sweep of blocked tasks, in
// (gmt_modified, id) order; the zero value is the start.
type BlockedCursor struct {
	Modified Millis `db:"gmt_modified"`
	ID       int64  `db:"id"`
}

// blockedBatch reads blocked rows after a cursor, by idx_retention (the
// same text on both engines).
var blockedBatch = "SELECT id, gmt_modified FROM argo_task WHERE task_status = " + StateValue(StateBlocked) +
	" AND gmt_modified < ? AND (gmt_modified > ? OR (gmt_modified = ? AND id > ?)) ORDER BY gmt_modified, id LIMIT ?"

// BlockedBatch reads up to limit blocked tasks last modified before before,
// that come after after in (gmt_modified, id) order: the next batch of a
// sweep. Fewer than limit means the sweep reached the end.
func (s *Store) BlockedBatch(ctx context.Context, before Millis, after BlockedCursor, limit int) ([]BlockedCursor, error) {
	var out []BlockedCursor
	err := s.db.SelectContext(ctx, &out, blockedBatch, before, after.Modified, after.Modified, after.ID, limit)
	return out, err
}

// UpstreamSkippedReason is the error_msg of a task the sweeper skipped
// because its upstream task was itself skipped.
func UpstreamSkippedReason(upstream int64) string {
	return fmt.Sprintf("upstream task %d was skipped", upstream)
}

// SettleBlocked settles those of the blocked tasks ids whose upstream tasks
// have all ended, as the transaction that ended the last of them would
// have: with an upstream task dead or discarded, that task's dependency
// steps are run again (its edges record the failure; every blocked task
// downstream of it is skipped); else with one skipped, the task and the
// blocked tasks downstream of it are skipped (UpstreamSkippedReason); else
// (all succeeded or recovered) the steps of each upstream task are run
// again, which settles their edges and releases the task. A task with an
// upstream task still unfinished, or purged, or with no edges left, is
// left as it is. One read of all their edges picks the candidates; each is
// then judged again and settled in a transaction of its own, on its
// upstream rows read locked (FOR UPDATE on MySQL). It returns how many
// tasks it released or skipped.
func (s *Store) SettleBlocked(ctx context.Context, ids []int64, now Millis) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var edges []struct {
		Task     int64 `db:"task_pk"`
		Upstream int64 `db:"upstream_pk"`
		Outcome  int   `db:"upstream_outcome"`
		State    State `db:"task_status"`
	}
	if err := s.db.SelectContext(ctx, &edges, s.sql.DepEdgesOf(len(ids)), anySlice(ids)...); err != nil {
		return 0, err
	}
	byTask := map[int64]map[int64]State{}
	for _, e := range edges {
		if byTask[e.Task] == nil {
			byTask[e.Task] = map[int64]State{}
		}
		byTask[e.Task][e.Upstream] = e.State
	}
	settled := 0
	for _, id := range ids {
		if act, _ := judgeBlocked(byTask[id]); act == blockedWaits {
			continue
		}
		var changed bool
		err := s.write(ctx, func(tx *sqlx.Tx) error {
			changed = false
			return s.settleBlocked(ctx, tx, id, now, &changed)
		})
		if err != nil {
			return settled, fmt.Errorf("argo: settling blocked task %d: %w", id, err)
		}
		if changed {
			settled++
		}
	}
	return settled, nil
}

// What the sweeper does with a blocked task (judgeBlocked).
const (
	blockedWaits   = iota // an upstream task unfinished or purged, or no edges
	blockedFailed         // an upstream task dead or discarded: its steps again
	blockedSkipped        // an upstream task skipped: skip it and its downstream
	blockedRelease        // all succeeded or recovered: their steps again
)

// judgeBlocked decides on a blocked task from its upstream tasks' states
// (-1: purged), and names the upstream task it acts on (failed, skipped).
func judgeBlocked(ups map[int64]State) (int, int64) {
	if len(ups) == 0 {
		return blockedWaits, 0
	}
	var failed, skipped int64
	ended := true
	for u, st := range ups {
		switch {
		case st == StateDead || st == StateDiscarded:
			if failed == 0 || u < failed {
				failed = u
			}
		case st == StateSkipped:
			if skipped == 0 || u < skipped {
				skipped = u
			}
		case upstreamOutcome(st) != UpstreamSucceeded:
			ended = false
		}
	}
	switch {
	case failed != 0:
		return blockedFailed, failed
	case !ended:
		return blockedWaits, 0
	case skipped != 0:
		return blockedSkipped, skipped
	}
	return blockedRelease, 0
}

// settleBlocked is SettleBlocked of task id in tx: judged again on its
// upstream rows read locked.
func (s *Store) settleBlocked(ctx context.Context, tx *sqlx.Tx, id int64, now Millis, changed *bool) error {
	if blocked, err := blockedState(ctx, tx, s, id); err != nil || !blocked {
		return err
	}
	var deps []Dependency
	if err := tx.SelectContext(ctx, &deps, s.sql.DepUpstream, id); err != nil {
		return err
	}
	ups := map[int64]State{}
	var present []int64
	for _, d := range deps {
		ups[d.TaskID] = -1 // purged unless read below
		present = append(present, d.TaskID)
	}
	if len(present) > 0 {
		var rows []struct {
			ID    int64 `db:"id"`
			State State `db:"task_status"`
		}
		if err := tx.SelectContext(ctx, &rows, s.sql.DepUpstreamStates(len(present)), anySlice(present)...); err != nil {
			return err
		}
		for _, r := range rows {
			ups[r.ID] = r.State
		}
	}
	act, u := judgeBlocked(ups)
	var err error
	switch act {
	case blockedWaits:
		return nil
	case blockedFailed:
		err = s.settleDownstream(ctx, tx, u, ups[u], now)
	case blockedSkipped:
		err = s.skipWithDownstream(ctx, tx, id, UpstreamSkippedReason(u), now)
	case blockedRelease:
		for _, up := range slices.Sorted(maps.Keys(ups)) { // in id order: the order locks are taken in
			if err = s.settleDownstream(ctx, tx, up, ups[up], now); err != nil {
				break
			}
		}
	}
	if err != nil {
		return err
	}
	blocked, err := blockedState(ctx, tx, s, id)
	*changed = err == nil && !blocked
	return err
}

// blockedState reads, in tx, whether task id is blocked.
func blockedState(ctx context.Context, tx *sqlx.Tx, s *Store, id int64) (bool, error) {
	var n int
	err := tx.GetContext(ctx, &n, "SELECT COUNT(*) FROM argo_task WHERE id = ? AND task_status = "+StateValue(StateBlocked), id)
	return n == 1, err
}

// skipWithDownstream skips blocked task id with reason, and every blocked
// task downstream of it, transitively.
func (s *Store) skipWithDownstream(ctx context.Context, tx *sqlx.Tx, id int64, reason string, now Millis) error {
	var closure []struct {
		ID    int64 `db:"id"`
		State State `db:"task_status"`
	}
	if err := tx.SelectContext(ctx, &closure, s.sql.DepDownstreamClosure, id); err != nil {
		return err
	}
	ids := []int64{id}
	for _, c := range closure {
		if c.State == StateBlocked {
			ids = append(ids, c.ID)
		}
	}
	q := "UPDATE argo_task SET task_status = " + StateValue(StateSkipped) + ", error_msg = ?, gmt_modified = ? WHERE task_status = " +
		StateValue(StateBlocked) + " AND id IN " + Placeholders(len(ids))
	_, err := tx.ExecContext(ctx, q, append([]any{SanitizeErrorText(reason), now}, anySlice(ids)...)...)
	return err
}
