package storagetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

func backlogCases() []testCase {
	return []testCase{
		{"DueAndHeld", backlogDueAndHeld},
		{"TenantLimit", backlogTenantLimit},
		{"ReadsIndexes", backlogReadsIndexes},
	}
}

// backlogRows writes the rows the backlog cases read at now = 10,000.
func backlogRows(t *testing.T, s *storage.Store) {
	t.Helper()
	rows := []struct {
		name, tenant string
		state        storage.State
		due          Millis
		owner        string
		leaseUntil   Millis
	}{
		{"a", "eu", pending, 5000, "", 0},
		{"a", "eu", retrying, 7000, "", 0},
		{"a", "us", exhausted, 9000, "", 0},
		{"a", "", pending, 10_000, "", 0},           // due at now: due
		{"a", "eu", pending, 10_001, "", 0},         // due after now
		{"b", "us", retrying, 12_000, "i1", 20_000}, // held, not due yet
		{"b", "eu", retrying, 8000, "i1", 30_000},   // held and due: its instance starts it
		{"b", "eu", retrying, 9500, "i2", 10_000},   // hold ran out at now: claimable, not held
		{"c", "eu", running, 1000, "i1", 40_000},
		{"c", "eu", succeeded, 1000, "", 0},
		{"c", "eu", dead, 1000, "", 0},
		{"c", "eu", storage.StateBlocked, 1000, "", 0},
	}
	for _, r := range rows {
		task := leasedTask(r.name, r.state, r.due, 0, r.owner, 1, r.leaseUntil)
		task.Tenant = r.tenant
		insert(t, s, task)
	}
}

func sortedCounts(in []storage.BacklogCount) []storage.BacklogCount {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b storage.BacklogCount) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// The due tasks are the pending, retrying and exhausted rows due by now
// (a held retry's too), per name and per tenant with the earliest due
// time; the held retries are the retrying rows whose lease runs.
func backlogDueAndHeld(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	backlogRows(t, s)
	got, err := s.Backlog(ctx, Millis(10_000).Time(), 10)
	if err != nil {
		t.Fatal(err)
	}
	wantTask := []storage.BacklogCount{{Name: "a", N: 4, Oldest: 5000}, {Name: "b", N: 2, Oldest: 8000}}
	if g := sortedCounts(got.ByTask); !slices.Equal(g, wantTask) {
		t.Fatalf("due per task name: %+v; want %+v", g, wantTask)
	}
	wantTenant := []storage.BacklogCount{{Name: "eu", N: 4, Oldest: 5000}, {Name: "", N: 1, Oldest: 10_000}, {Name: "us", N: 1, Oldest: 9000}}
	if !slices.Equal(got.ByTenant, wantTenant) || got.TenantsCut {
		t.Fatalf("due per tenant: %+v (cut %v); want %+v, the most first, not cut", got.ByTenant, got.TenantsCut, wantTenant)
	}
	held := slices.Clone(got.Held)
	slices.SortFunc(held, func(a, b storage.BacklogHeld) int { return strings.Compare(a.Tenant, b.Tenant) })
	wantHeld := []storage.BacklogHeld{{Task: "b", Tenant: "eu", N: 1}, {Task: "b", Tenant: "us", N: 1}}
	if !slices.Equal(held, wantHeld) {
		t.Fatalf("held retries: %+v; want %+v (a hold that ran out at now is not held)", held, wantHeld)
	}
}

// Only the tenants with the most tasks due are read, and the read says
// that there were more.
func backlogTenantLimit(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	backlogRows(t, s)
	got, err := s.Backlog(ctx, Millis(10_000).Time(), 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.BacklogCount{{Name: "eu", N: 4, Oldest: 5000}}
	if !slices.Equal(got.ByTenant, want) || !got.TenantsCut {
		t.Fatalf("top tenant: %+v (cut %v); want %+v, cut", got.ByTenant, got.TenantsCut, want)
	}
	got, err = s.Backlog(ctx, Millis(10_000).Time(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ByTenant) != 3 || got.TenantsCut {
		t.Fatalf("3 tenants of 3: %+v (cut %v); want all 3, not cut", got.ByTenant, got.TenantsCut)
	}
}

// The backlog's statements read indexes, not the table: the due counts
// idx_state_name alone, the held retries idx_lease (docs/backlog.md; on a
// 1M-row table a scan would read every finished row).
func backlogReadsIndexes(t *testing.T, e Engine) {
	s := e.Open(t)
	backlogRows(t, s)
	// Retries held by one instance, as after a downstream outage: the
	// planner, left to itself, reads them through idx_state_name's
	// retrying entries (then each row for its lease).
	for range 20 {
		insert(t, s, leasedTask("d", retrying, 11_000, 0, "i3", 1, 60_000))
	}
	// With the table's statistics gathered, as a long-lived table has them
	// (MariaDB's planner then prefers idx_state_name's ref on retrying for
	// the held retries, as on a 1M-row table, unless told otherwise).
	analyze := "ANALYZE TABLE argo_task"
	if s.Driver().Name() == "sqlite" {
		analyze = "ANALYZE"
	}
	if _, err := s.DB().ExecContext(ctxFor(t), analyze); err != nil {
		t.Fatal(err)
	}
	byTask, byTenant, held := s.BacklogStatements()
	for _, c := range []struct {
		what, query, index string
		args               []any
	}{
		{"due per task name", byTask, "idx_state_name", []any{10_000}},
		{"due per tenant", byTenant, "idx_state_name", []any{10_000, 10}},
		{"held retries", held, "idx_lease", []any{10_000}},
	} {
		plan := explain(t, s, c.query, c.args...)
		// The index read, not one the planner only considered
		// (possible_keys): MySQL's column key, SQLite's "USING … INDEX".
		used := "key=" + c.index + " "
		if s.Driver().Name() == "sqlite" {
			used = "INDEX " + c.index + " "
		}
		if !strings.Contains(plan+" ", used) {
			t.Errorf("%s: plan %q; want it to read %s", c.what, plan, c.index)
		}
		if c.index == "idx_state_name" && s.Driver().Name() != "sqlite" && !strings.Contains(plan, "Using index") {
			t.Errorf("%s: plan %q; want the index alone (Using index), no row read", c.what, plan)
		}
		if s.Driver().Name() == "sqlite" && strings.Contains(plan, "SCAN argo_task") && !strings.Contains(plan, "USING") {
			t.Errorf("%s: plan %q scans argo_task", c.what, plan)
		}
	}
}

// explain returns the engine's plan of query, one line per step.
func explain(t *testing.T, s *storage.Store, query string, args ...any) string {
	t.Helper()
	prefix := "EXPLAIN "
	if s.Driver().Name() == "sqlite" {
		prefix = "EXPLAIN QUERY PLAN "
	}
	rows, err := s.DB().QueryContext(ctxFor(t), prefix+query, args...)
	if err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var parts []string
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			parts = append(parts, cols[i]+"="+strings.TrimSpace(strings.ReplaceAll(fmt.Sprint(v), "\n", " ")))
		}
		lines = append(lines, strings.Join(parts, " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "; ")
}
