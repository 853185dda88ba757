package storage

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/argo-retry/argo/argotype"
)

// Filter selects tasks for List, Count, CountUpTo and IDs: runtime.Filter
// (which documents the fields) as the Inspector hands it over, its
// NameSuffix resolved into Names.
// Criteria combine with AND; a zero field is no criterion. Limit and Offset
// page the result and are not criteria: a Filter with only them matches
// every task (see Empty).
type Filter struct {
	States        []State   // task_status IN States
	Name          string    // task_id (the task name), exactly
	Names         []string  // task_id IN Names
	Shard         *int      // shard_key
	Since, Until  time.Time // Since <= gmt_modified < Until (last state change)
	ErrorContains string    // in error_msg or fallback_error_msg, case-insensitive
	IDs           []int64   // id IN IDs
	NotRequeued   bool      // requeued_to IS NULL: not requeued into a new task (migration 000005)
	Tenant        string    // tenant, exactly ("": any tenant; migration 000009)
	// BeforeID pages by key: id < BeforeID (0: no bound). With Limit, the
	// next page of a newest-first listing is BeforeID = the last id shown;
	// unlike Offset, rows inserted meanwhile neither repeat nor skip a row.
	BeforeID int64
	// NameContains is a substring of the task name, matched ignoring case;
	// %, _ and \ in it are literal characters, not wildcards.
	NameContains string
	// UniqueKey is the task's unique key (argo_task.unique_key), exactly.
	UniqueKey string
	// ErrorCode is the code of the task's last failed attempt
	// (argo_task.error_code, migration 000021), exactly, byte for byte.
	ErrorCode     string
	Limit, Offset int // paging, newest id first; Limit 0 is no limit

	// matchNone: narrow found no task name the criteria can select.
	matchNone bool
}

// Empty reports whether f has no criteria, so that it would match every
// task. argoctl refuses to change rows by an empty filter without --all.
func (f Filter) Empty() bool {
	return len(f.States) == 0 && f.Name == "" && len(f.Names) == 0 && f.Shard == nil && f.Since.IsZero() && f.Until.IsZero() && f.ErrorContains == "" && len(f.IDs) == 0 && !f.NotRequeued && f.Tenant == "" &&
		f.BeforeID == 0 && f.NameContains == "" && f.UniqueKey == "" && f.ErrorCode == ""
}

// where renders f's criteria as a WHERE clause ("1=1" when empty) and its
// arguments; only placeholders carry values.
func (f Filter) where() (string, []any) {
	conds := []string{"1=1"}
	var args []any
	if len(f.States) > 0 {
		in, a := InList(f.States)
		conds = append(conds, "task_status IN "+in)
		args = append(args, a...)
	}
	if f.Name != "" {
		conds = append(conds, "task_id = ?")
		args = append(args, f.Name)
	}
	if len(f.Names) > 0 {
		in, a := InList(f.Names)
		conds = append(conds, "task_id IN "+in)
		args = append(args, a...)
	}
	if f.Shard != nil {
		conds = append(conds, "shard_key = ?")
		args = append(args, *f.Shard)
	}
	if !f.Since.IsZero() {
		conds = append(conds, "gmt_modified >= ?")
		args = append(args, ToMillis(f.Since))
	}
	if !f.Until.IsZero() {
		conds = append(conds, "gmt_modified < ?")
		args = append(args, ToMillis(f.Until))
	}
	if f.ErrorContains != "" {
		// '!' escapes LIKE wildcards the same way on MySQL and SQLite; both
		// sides are lower-cased so that the match ignores case everywhere
		// (MySQL's utf8mb4_bin would otherwise be case-sensitive).
		pat := "%" + likeEscaper.Replace(strings.ToLower(f.ErrorContains)) + "%"
		conds = append(conds, "(LOWER(error_msg) LIKE ? ESCAPE '!' OR LOWER(fallback_error_msg) LIKE ? ESCAPE '!')")
		args = append(args, pat, pat)
	}
	if len(f.IDs) > 0 {
		in, a := InList(f.IDs)
		conds = append(conds, "id IN "+in)
		args = append(args, a...)
	}
	if f.NotRequeued {
		conds = append(conds, "requeued_to IS NULL")
	}
	if f.Tenant != "" {
		conds = append(conds, "tenant = ?")
		args = append(args, f.Tenant)
	}
	if f.ErrorCode != "" {
		conds = append(conds, "error_code = ?")
		args = append(args, f.ErrorCode)
	}
	conds, args = f.consoleWhere(conds, args)
	return strings.Join(conds, " AND "), args
}

var likeEscaper = strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")

// paging renders ORDER BY and LIMIT/OFFSET: newest id first.
func (f Filter) paging() (string, []any) {
	limit, offset := f.Limit, f.Offset
	if limit <= 0 && offset <= 0 {
		return " ORDER BY id DESC", nil
	}
	if limit <= 0 {
		limit = 1 << 62 // both databases need a LIMIT before OFFSET
	}
	if offset < 0 {
		offset = 0
	}
	return " ORDER BY id DESC LIMIT ? OFFSET ?", []any{limit, offset}
}

// The Inspector's Stats and its parts (see argotype).
type (
	NameStateCount = argotype.NameStateCount
	DueTask        = argotype.DueTask
	Stats          = argotype.Stats
)

// CountByState returns how many tasks are in each state.
func (s *Store) CountByState(ctx context.Context) (map[State]int, error) {
	var rows []struct {
		State State `db:"task_status"`
		N     int   `db:"n"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.sql.CountByState); err != nil {
		return nil, fmt.Errorf("argo: count tasks: %w", err)
	}
	out := map[State]int{}
	for _, r := range rows {
		out[r.State] = r.N
	}
	return out, nil
}

// List returns the tasks f selects, newest id first, paged by f.Limit and
// f.Offset.
func (s *Store) List(ctx context.Context, f Filter) ([]*Task, error) {
	f, err := s.narrow(ctx, f)
	if err != nil {
		return nil, err
	}
	where, args := f.where()
	page, pargs := f.paging()
	var out []*Task
	if err := s.db.SelectContext(ctx, &out, s.sql.ListTasks(where, page), append(args, pargs...)...); err != nil {
		return nil, fmt.Errorf("argo: list tasks: %w", err)
	}
	return out, nil
}

// Count returns how many tasks f selects, ignoring Limit and Offset.
func (s *Store) Count(ctx context.Context, f Filter) (int, error) {
	f, err := s.narrow(ctx, f)
	if err != nil {
		return 0, err
	}
	where, args := f.where()
	var n int
	if err := s.db.GetContext(ctx, &n, s.sql.CountTasks(where), args...); err != nil {
		return 0, fmt.Errorf("argo: count tasks: %w", err)
	}
	return n, nil
}

// IDs returns the ids f selects, newest first, paged as List.
func (s *Store) IDs(ctx context.Context, f Filter) ([]int64, error) {
	f, err := s.narrow(ctx, f)
	if err != nil {
		return nil, err
	}
	where, args := f.where()
	page, pargs := f.paging()
	var ids []int64
	if err := s.db.SelectContext(ctx, &ids, s.sql.TaskIDs(where, page), append(args, pargs...)...); err != nil {
		return nil, fmt.Errorf("argo: select tasks: %w", err)
	}
	return ids, nil
}

// TaskNames returns the distinct task names in argo_task, sorted.
func (s *Store) TaskNames(ctx context.Context) ([]string, error) {
	var names []string
	if err := s.db.SelectContext(ctx, &names, s.sql.TaskNames); err != nil {
		return nil, fmt.Errorf("argo: task names: %w", err)
	}
	return names, nil
}

// Stats counts tasks per state and per name, finds the oldest due task, and
// computes retry and dead rates over the window before now.
func (s *Store) Stats(ctx context.Context, now time.Time, window time.Duration) (*Stats, error) {
	if window <= 0 {
		return nil, fmt.Errorf("argo: stats window %s must be positive", window)
	}
	st := &Stats{At: now, Window: window, ByState: map[State]int{}}
	db := s.db
	if err := db.SelectContext(ctx, &st.ByName, s.sql.CountByNameAndState); err != nil {
		return nil, fmt.Errorf("argo: stats: %w", err)
	}
	for _, c := range st.ByName {
		st.ByState[c.State] += c.N
		st.Total += c.N
	}

	var due []struct {
		ID    int64  `db:"id"`
		Name  string `db:"task_id"`
		State State  `db:"task_status"`
		Due   Millis `db:"execute_time"`
	}
	if err := db.SelectContext(ctx, &due, s.sql.OldestDue, ToMillis(now)); err != nil {
		return nil, fmt.Errorf("argo: stats: oldest due task: %w", err)
	}
	if len(due) == 1 {
		d := due[0]
		st.OldestDue = &DueTask{ID: d.ID, Name: d.Name, State: d.State, Due: d.Due.Time(), Lag: now.Sub(d.Due.Time())}
	}

	since := ToMillis(now.Add(-window))
	var att struct {
		N      int           `db:"n"`
		Failed sql.NullInt64 `db:"failed"`
	}
	if err := db.GetContext(ctx, &att, s.sql.AttemptsSince, OutcomeSucceeded, since); err != nil {
		return nil, fmt.Errorf("argo: stats: attempts: %w", err)
	}
	// Succeeded attempts are recorded on their task rows (migration 000002).
	var onRow int
	if err := db.GetContext(ctx, &onRow, s.sql.SucceededOnRowSince, since); err != nil {
		return nil, fmt.Errorf("argo: stats: succeeded attempts: %w", err)
	}
	st.Attempts, st.FailedAttempts = att.N+onRow, int(att.Failed.Int64)
	if st.Attempts > 0 {
		st.RetryRate = float64(st.FailedAttempts) / float64(st.Attempts)
	}

	var fin struct {
		N    int           `db:"n"`
		Dead sql.NullInt64 `db:"dead"`
	}
	if err := db.GetContext(ctx, &fin, s.sql.FinishedSince, since); err != nil {
		return nil, fmt.Errorf("argo: stats: finished tasks: %w", err)
	}
	st.Finished, st.Dead = fin.N, int(fin.Dead.Int64)
	if st.Finished > 0 {
		st.DeadRate = float64(st.Dead) / float64(st.Finished)
	}
	return st, nil
}
