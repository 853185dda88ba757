package storagetest

import (
	"maps"
	"slices"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// tenantCases: a task's tenant and its caller's trace context are stored
// with it, read back by every read of the row, and selected by an indexed
// filter (migration 000009).
func tenantCases() []testCase {
	return []testCase{
		{"StoredAndReadBack", tenantStored},
		{"Filter", tenantFilter},
		{"DeadLettersPerTenant", tenantDeadLetters},
		{"Indexed", tenantIndexed},
	}
}

const traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// Insert stores tenant and trace_parent; Get and a claim read them back.
func tenantStored(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	task := newTask("a", pending, 100, 0)
	task.Tenant, task.TraceParent = "acme-eu", traceParent
	plain := newTask("a", pending, 100, 0)
	insert(t, s, task, plain)
	if got := get(t, s, task.ID); got.Tenant != "acme-eu" || got.TraceParent != traceParent {
		t.Fatalf("read back tenant %q, trace %q; want acme-eu, %s", got.Tenant, got.TraceParent, traceParent)
	}
	if got := get(t, s, plain.ID); got.Tenant != "" || got.TraceParent != "" {
		t.Fatalf("a task without tenant reads back tenant %q, trace %q; want both empty", got.Tenant, got.TraceParent)
	}
	claimed, err := s.ClaimDue(ctx, "w1", 200, 5000, 10, []string{"a"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range claimed {
		if c.ID == task.ID {
			found = true
			if c.Tenant != "acme-eu" || c.TraceParent != traceParent {
				t.Fatalf("claim read tenant %q, trace %q; want acme-eu, %s", c.Tenant, c.TraceParent, traceParent)
			}
		}
	}
	if !found {
		t.Fatalf("claim took %d tasks, not task %d", len(claimed), task.ID)
	}
}

// Filter.Tenant selects exactly one tenant's tasks (List, Count, IDs),
// combined with the other criteria; "" selects every tenant.
func tenantFilter(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	var eu, us, none []int64
	for i := range 3 {
		task := newTask("a", pending, 100, 0)
		if i == 2 {
			task.State = dead
		}
		task.Tenant = "eu"
		insert(t, s, task)
		eu = append(eu, task.ID)
	}
	for _, tenant := range []string{"us", "", "EU", "eu "} {
		task := newTask("a", pending, 100, 0)
		task.Tenant = tenant
		insert(t, s, task)
		if tenant == "us" {
			us = append(us, task.ID)
		} else {
			none = append(none, task.ID)
		}
	}
	ids := func(f storage.Filter) []int64 {
		t.Helper()
		got, err := s.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, g := range got {
			out = append(out, g.ID)
		}
		slices.Sort(out)
		n, err := s.Count(ctx, f)
		if err != nil || n != len(out) {
			t.Fatalf("Count(%+v) = %d, %v; List found %d", f, n, err, len(out))
		}
		return out
	}
	if got := ids(storage.Filter{Tenant: "eu"}); !slices.Equal(got, eu) {
		t.Fatalf("tenant eu: tasks %v; want %v (tenants EU and \"eu \" are others)", got, eu)
	}
	if got := ids(storage.Filter{Tenant: "us"}); !slices.Equal(got, us) {
		t.Fatalf("tenant us: tasks %v; want %v", got, us)
	}
	if got := ids(storage.Filter{Tenant: "eu", States: []storage.State{dead}}); !slices.Equal(got, eu[2:]) {
		t.Fatalf("tenant eu, dead: tasks %v; want %v", got, eu[2:])
	}
	if got := ids(storage.Filter{}); len(got) != len(eu)+len(us)+len(none) {
		t.Fatalf("no tenant criterion: %d tasks; want all %d", len(got), len(eu)+len(us)+len(none))
	}
	if (storage.Filter{Tenant: "eu"}).Empty() {
		t.Fatal("a filter with a tenant reports Empty: argoctl would take it for no criterion")
	}
	counts, err := s.CountByStateOfTenant(ctx, "eu")
	if err != nil {
		t.Fatal(err)
	}
	if counts[pending] != 2 || counts[dead] != 1 || len(counts) != 2 {
		t.Fatalf("counts of tenant eu: %v; want 2 pending, 1 dead", counts)
	}
}

// DeadLettersByTenant counts dead tasks not requeued, per tenant.
func tenantDeadLetters(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	for _, row := range []struct {
		tenant string
		state  storage.State
	}{{"eu", dead}, {"eu", dead}, {"eu", retrying}, {"us", dead}, {"", dead}, {"ap", succeeded}} {
		task := newTask("a", row.state, 100, 0)
		task.Tenant = row.tenant
		insert(t, s, task)
	}
	requeued := newTask("a", dead, 100, 0)
	requeued.Tenant = "us"
	insert(t, s, requeued)
	if _, err := s.RequeueAsNew(ctx, requeued.ID, "fixed", "ops", 500); err != nil {
		t.Fatal(err)
	}
	got, err := s.DeadLettersByTenant(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"eu": 2, "us": 1, "": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("dead letters per tenant: %v; want %v (the requeued dead row of us is no dead letter)", got, want)
	}
	total, err := s.CountDeadLetters(ctx)
	if err != nil || total != 4 {
		t.Fatalf("CountDeadLetters = %d, %v; want 4, the sum per tenant", total, err)
	}
}

// idx_tenant_state exists on argo_task, tenant first.
func tenantIndexed(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	var q string
	switch s.Driver().Name() {
	case "sqlite":
		q = "SELECT name FROM pragma_index_info('idx_tenant_state') ORDER BY seqno"
	default:
		q = "SELECT column_name FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'argo_task' AND index_name = 'idx_tenant_state' ORDER BY seq_in_index"
	}
	rows, err := s.DB().QueryContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cols, []string{"tenant", "task_status"}) {
		t.Fatalf("idx_tenant_state columns %v; want [tenant task_status]", cols)
	}
}
