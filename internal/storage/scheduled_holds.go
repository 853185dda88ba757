package storage

import (
	"cmp"
	"context"
	"slices"
	"strings"
)

// HoldScheduled holds, for owner's local timer, up to limit scheduled calls
// (pending rows, their first attempt not yet run) of groups' scope that
// fall due after now and by dueBy and that nobody leases or holds. Each is
// leased by owner until its own due time + holdFor: no claim takes it
// before then, and the owner starts it at its due time with StartHeld
// (HeldStart.Scheduled), as a held retry. It returns the rows it held, as
// held (LeaseOwner, LeaseUntil set), earliest due first.
//
// Candidates are read with a plain read of the due index, then each is
// held with a fenced UPDATE by primary key that changes the row only if it
// is still as read (pending, same attempt count and due time, not leased):
// exactly the rows whose UPDATE changed them are returned, so two
// instances never hold the same call. A row due already is left to the
// claim.
func (s *Store) HoldScheduled(ctx context.Context, owner string, now, dueBy Millis, holdFor Millis, limit int, groups []ClaimGroup) ([]*Task, error) {
	scope, scopeArgs := scopeCondition(groups)
	if scope == "" || limit <= 0 || dueBy <= now {
		return nil, nil
	}
	args := append([]any{now, dueBy, now}, scopeArgs...)
	var cands []*Task
	if err := s.db.SelectContext(ctx, &cands, s.sql.ScheduledHoldCandidates(scope), append(args, limit)...); err != nil {
		return nil, err
	}
	if len(cands) == 0 {
		return nil, nil
	}
	byID := SortedByID(cands)
	rows := make([][]any, len(byID))
	for i, t := range byID {
		rows[i] = []any{owner, t.ExecuteTime + holdFor, t.ID, t.ShardKey, t.ExecuteTimes, t.ExecuteTime, now}
	}
	changed, err := s.execRowwise(ctx, s.sql.HoldScheduled, rows)
	if err != nil {
		return nil, err
	}
	var held []*Task
	for i, t := range byID {
		if changed[i] {
			t.LeaseOwner, t.LeaseUntil = owner, t.ExecuteTime+holdFor
			held = append(held, t)
		}
	}
	slices.SortFunc(held, func(a, b *Task) int {
		return cmp.Or(cmp.Compare(a.ExecuteTime, b.ExecuteTime), cmp.Compare(a.ID, b.ID))
	})
	return held, nil
}

// HoldScheduledSQL holds one scheduled call (Statements.HoldScheduled):
// arguments owner, hold, then the fence (id, shard_key, attempt, due
// time, now).
func (s *Store) HoldScheduledSQL() string { return s.sql.HoldScheduled }

// scopeCondition renders groups as one condition on task_id and shard_key
// with its arguments, or "" when no group selects anything (no handler
// here, or no shard owned).
func scopeCondition(groups []ClaimGroup) (string, []any) {
	var ors []string
	var args []any
	for _, g := range groups {
		if len(g.Names) == 0 || (g.Shards != nil && len(g.Shards) == 0) {
			continue
		}
		nameIn, nameArgs := InList(g.Names)
		cond := "task_id IN " + nameIn
		args = append(args, nameArgs...)
		if g.Shards != nil {
			in, sargs := InList(g.Shards)
			cond += " AND shard_key IN " + in
			args = append(args, sargs...)
		}
		cond, args = withTenants(cond, args, g.Tenants)
		ors = append(ors, "("+cond+")")
	}
	if len(ors) == 0 {
		return "", nil
	}
	return "(" + strings.Join(ors, " OR ") + ")", args
}
