package storage

import (
	"context"
	"fmt"
	"strings"
)

// consoleWhere appends the console's criteria of f (BeforeID, NameContains,
// UniqueKey) to a WHERE clause's conditions and arguments.
func (f Filter) consoleWhere(conds []string, args []any) ([]string, []any) {
	if f.BeforeID != 0 {
		conds = append(conds, "id < ?")
		args = append(args, f.BeforeID)
	}
	if f.NameContains != "" {
		// As ErrorContains: '!' escapes the wildcards on both databases, and
		// both sides are lower-cased (SQLite's LIKE ignores ASCII case, the
		// name's utf8mb4_bin collation on MySQL does not).
		conds = append(conds, "LOWER(task_id) LIKE ? ESCAPE '!'")
		args = append(args, "%"+likeEscaper.Replace(strings.ToLower(f.NameContains))+"%")
	}
	if f.UniqueKey != "" {
		conds = append(conds, "unique_key = ?")
		args = append(args, f.UniqueKey)
	}
	return conds, args
}

// DefaultCountBound is the bound a console count stops at when the caller
// gives none (CountUpTo with max <= 0): the list page shows "10000+".
const DefaultCountBound = 10000

// CountUpTo counts the tasks f selects, ignoring Limit and Offset, but
// stops at max (DefaultCountBound when max <= 0): n is the exact count when
// more is false, and max when more is true (at least max+1 tasks match).
// The database reads at most max+1 matching index entries or rows, so a
// count over a large table stays as fast as one page of it.
func (s *Store) CountUpTo(ctx context.Context, f Filter, max int) (n int, more bool, err error) {
	if max <= 0 {
		max = DefaultCountBound
	}
	q, args := CountUpToQuery(s.sql, f, max)
	if err := s.db.GetContext(ctx, &n, q, args...); err != nil {
		return 0, false, fmt.Errorf("argo: count tasks: %w", err)
	}
	if n > max {
		return max, true, nil
	}
	return n, false, nil
}

// ListQuery is the statement and arguments List runs for f, with st (a
// driver's Statements): for a plan (EXPLAIN) of the console's list page.
func ListQuery(st *Statements, f Filter) (string, []any) {
	where, args := f.where()
	page, pargs := f.paging()
	return st.ListTasks(where, page), append(args, pargs...)
}

// CountUpToQuery is the statement and arguments CountUpTo runs for f and
// max, with st.
func CountUpToQuery(st *Statements, f Filter, max int) (string, []any) {
	where, args := f.where()
	return st.CountTasksUpTo(where), append(args, max+1)
}
