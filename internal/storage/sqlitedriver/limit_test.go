package sqlitedriver_test

import (
	"context"
	"strings"
	"testing"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/argo-retry/argo/internal/storage/sqlitedriver"
)

// hotStatements are the SQLite statements with a LIMIT that argo runs on
// every claim or sweep, with scopes as the runtime writes them.
func hotStatements() map[string]string {
	st := (&sqlitedriver.Driver{}).SQL()
	one, shards := "((task_id IN (?)))", "((task_id IN (?) AND shard_key IN (?, ?, ?)))"
	return map[string]string{
		"Claim":                     sqlitedriver.Claim(one),
		"Claim/shards":              sqlitedriver.Claim(shards),
		"FlowCandidates":            st.FlowCandidates("(0, 2)", "task_id IN (?)"),
		"FlowCandidatesCounted":     st.FlowCandidatesCounted("(0, 2)", "task_id IN (?)", 1),
		"FlowDue":                   st.FlowDue("(0, 2, 4)", "task_id IN (?)"),
		"ExpiredLeases":             st.ExpiredLeases,
		"PurgeCandidates":           st.PurgeCandidates,
		"OrphanCandidates":          st.OrphanCandidates(0),
		"OrphanCandidates/known":    st.OrphanCandidates(2),
		"ScheduledHoldCandidates":   st.ScheduledHoldCandidates(one),
		"ScheduledHoldCandidates/2": st.ScheduledHoldCandidates(shards),
	}
}

// A statement the connection keeps prepared runs again as it is: binding
// its parameters does not make SQLite plan it again (a bare "LIMIT ?" did,
// on every call). Run through SQLite's own API, which counts re-prepares.
func TestHotStatementsNotReprepared(t *testing.T) {
	s := openStore(t) // a migrated file
	var path string
	if err := s.DB().QueryRow("SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&path); err != nil {
		t.Fatal(err)
	}
	tls := libc.NewTLS()
	defer tls.Close()
	cstr := func(s string) uintptr {
		p, err := libc.CString(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	out := libc.Xmalloc(tls, 8)
	defer libc.Xfree(tls, out)
	name := cstr(path)
	defer libc.Xfree(tls, name)
	if rc := sqlite3.Xsqlite3_open_v2(tls, name, out, sqlite3.SQLITE_OPEN_READWRITE, 0); rc != sqlite3.SQLITE_OK {
		t.Fatalf("open %s: rc %d", path, rc)
	}
	db := *(*uintptr)(unsafe.Add(nil, out)) // C memory (libc.Xmalloc), not Go
	defer sqlite3.Xsqlite3_close_v2(tls, db)
	for what, q := range hotStatements() {
		text := cstr(q)
		if rc := sqlite3.Xsqlite3_prepare_v2(tls, db, text, -1, out, 0); rc != sqlite3.SQLITE_OK {
			libc.Xfree(tls, text)
			t.Fatalf("%s: prepare: rc %d: %s", what, rc, libc.GoString(sqlite3.Xsqlite3_errmsg(tls, db)))
		}
		stmt := *(*uintptr)(unsafe.Add(nil, out)) // C memory (libc.Xmalloc), not Go
		n := sqlite3.Xsqlite3_bind_parameter_count(tls, stmt)
		for call := range 3 {
			for i := int32(1); i <= n; i++ {
				sqlite3.Xsqlite3_bind_int64(tls, stmt, i, int64(call+1))
			}
			rc := sqlite3.Xsqlite3_step(tls, stmt)
			for rc == sqlite3.SQLITE_ROW {
				rc = sqlite3.Xsqlite3_step(tls, stmt)
			}
			if rc != sqlite3.SQLITE_DONE {
				t.Errorf("%s: step: rc %d: %s", what, rc, libc.GoString(sqlite3.Xsqlite3_errmsg(tls, db)))
			}
			sqlite3.Xsqlite3_reset(tls, stmt)
		}
		if got := sqlite3.Xsqlite3_stmt_status(tls, stmt, sqlite3.SQLITE_STMTSTATUS_REPREPARE, 0); got != 0 {
			t.Errorf("%s re-prepared %d times in 3 runs (each bind made SQLite plan it again): %s", what, got, q)
		}
		sqlite3.Xsqlite3_finalize(tls, stmt)
		libc.Xfree(tls, text)
	}
}

// "LIMIT +?" keeps the plan SQLite chose when it read the LIMIT's value: the
// query plan is the same as with the value written in, small or large.
func TestLimitArgKeepsThePlan(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	plan := func(q string) string {
		args := make([]any, strings.Count(q, "?"))
		for i := range args {
			args[i] = 1
		}
		rows, err := s.DB().QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatalf("%v: %s", err, q)
		}
		defer rows.Close()
		var lines []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, detail)
		}
		return strings.Join(lines, "; ")
	}
	for what, q := range hotStatements() {
		if !strings.Contains(q, "LIMIT +?") {
			t.Errorf("%s: no LIMIT +?: %s", what, q)
			continue
		}
		got := plan(q)
		for _, n := range []string{"1", "100", "10000"} {
			if want := plan(strings.Replace(q, "LIMIT +?", "LIMIT "+n, 1)); got != want {
				t.Errorf("%s: plan with LIMIT +?:\n  %s\nwith LIMIT %s:\n  %s", what, got, n, want)
			}
		}
	}
}
