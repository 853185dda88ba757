package storage

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/argo-retry/argo/argotype"
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
		args = append(args, containsPattern(f.NameContains))
	}
	if f.UniqueKey != "" {
		conds = append(conds, "unique_key = ?")
		args = append(args, f.UniqueKey)
	}
	if f.matchNone {
		conds = append(conds, "1=0")
	}
	return conds, args
}

// maxNarrowNames caps the names narrow puts in a statement (one
// placeholder each): with more, the criteria alone select the rows.
const maxNarrowNames = 1000

// narrow adds to f the task names its NameContains and UniqueKey criteria
// can select, so that the database reads the rows of those names through
// an index that begins with task_id instead of testing every row: the names
// containing NameContains are read from the distinct names (one probe per
// name of uk_task_unique, not a scan of the rows); a UniqueKey without a
// name becomes a lookup of (name, key) in uk_task_unique for every name.
// The criteria themselves stay in the WHERE clause: narrow changes how the
// rows are found, never which.
func (s *Store) narrow(ctx context.Context, f Filter) (Filter, error) {
	if f.NameContains != "" {
		var names []string
		if err := s.db.SelectContext(ctx, &names, s.sql.TaskNamesContaining, containsPattern(f.NameContains)); err != nil {
			return f, fmt.Errorf("argo: task names containing %q: %w", f.NameContains, err)
		}
		if len(f.Names) > 0 {
			names = slices.DeleteFunc(names, func(n string) bool { return !slices.Contains(f.Names, n) })
		}
		if len(names) == 0 {
			f.matchNone = true
			return f, nil
		}
		if len(names) <= maxNarrowNames {
			f.Names = names
		}
	}
	if f.UniqueKey != "" && f.Name == "" && len(f.Names) == 0 {
		names, err := s.TaskNames(ctx)
		if err != nil {
			return f, err
		}
		if len(names) == 0 {
			f.matchNone = true
			return f, nil
		}
		if len(names) <= maxNarrowNames {
			f.Names = names
		}
	}
	return f, nil
}

// containsPattern is the LIKE pattern (escape '!') of a case-insensitive
// substring: the text lower-cased, its wildcards escaped.
func containsPattern(text string) string {
	return "%" + likeEscaper.Replace(strings.ToLower(text)) + "%"
}

// DefaultCountBound is the bound a console count stops at when the caller
// gives none (CountUpTo with max <= 0): the list page shows "10000+".
const DefaultCountBound = argotype.DefaultCountBound

// CountUpTo counts the tasks f selects, ignoring Limit and Offset, but
// stops at max (DefaultCountBound when max <= 0): n is the exact count when
// more is false, and max when more is true (at least max+1 tasks match).
// The database reads at most max+1 matching index entries or rows, so a
// count over a large table stays as fast as one page of it.
func (s *Store) CountUpTo(ctx context.Context, f Filter, max int) (n int, more bool, err error) {
	if max <= 0 {
		max = DefaultCountBound
	}
	q, args, err := s.CountUpToQuery(ctx, f, max)
	if err != nil {
		return 0, false, err
	}
	if err := s.db.GetContext(ctx, &n, q, args...); err != nil {
		return 0, false, fmt.Errorf("argo: count tasks: %w", err)
	}
	if n > max {
		return max, true, nil
	}
	return n, false, nil
}

// ListQuery is the statement and arguments List runs for f: for a plan
// (EXPLAIN) of the console's list page.
func (s *Store) ListQuery(ctx context.Context, f Filter) (string, []any, error) {
	f, err := s.narrow(ctx, f)
	if err != nil {
		return "", nil, err
	}
	where, args := f.where()
	page, pargs := f.paging()
	return s.sql.ListTasks(where, page), append(args, pargs...), nil
}

// CountUpToQuery is the statement and arguments CountUpTo runs for f and
// max (at least 1).
func (s *Store) CountUpToQuery(ctx context.Context, f Filter, max int) (string, []any, error) {
	f, err := s.narrow(ctx, f)
	if err != nil {
		return "", nil, err
	}
	where, args := f.where()
	return s.sql.CountTasksUpTo(where), append(args, max+1), nil
}
