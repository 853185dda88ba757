package storagetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// fairShareCases: the fair-share claim's read of the tenants with tasks
// due (DueTenants, runtime Config.TenantFairShare): who has a claimable
// task of the names due, each once with its earliest due time, limited to
// a tenant list, read from idx_state_name alone; and the claim of one
// tenant's share (ClaimTenant).
func fairShareCases() []testCase {
	return []testCase{
		{"DueTenants", fairDueTenants},
		{"DueTenantsReadsIndex", fairDueTenantsPlan},
		{"ClaimTenant", fairClaimTenant},
	}
}

// fairRows inserts claimable and other tasks of several tenants: due by
// 200 of name "a": acme (100), globex (50 pending, 150 retrying), "" (120,
// exhausted); not due: later (900); not claimable: done (succeeded),
// busy (running); another name: other ("b").
func fairRows(t *testing.T, s *storage.Store) {
	t.Helper()
	add := func(name string, state storage.State, due Millis, tenant string) {
		task := newTask(name, state, due, 0)
		task.Tenant = tenant
		if state == running {
			task.LeaseOwner, task.LeaseUntil, task.ExecuteTimes = "i1", 60_000, 1
		}
		insert(t, s, task)
	}
	add("a", pending, 100, "acme")
	add("a", pending, 150, "acme")
	add("a", pending, 50, "globex")
	add("a", retrying, 150, "globex")
	add("a", exhausted, 120, "")
	add("a", pending, 900, "later")
	add("a", succeeded, 10, "done")
	add("a", running, 10, "busy")
	add("b", pending, 10, "other")
}

func fairDueTenants(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	fairRows(t, s)
	got, err := s.DueTenants(ctx, 200, []string{"a"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.DueTenant{{Tenant: "", Oldest: 120}, {Tenant: "acme", Oldest: 100}, {Tenant: "globex", Oldest: 50}}
	if !slices.Equal(got, want) {
		t.Fatalf("DueTenants(200, [a], every tenant) = %v, want %v", got, want)
	}
	got, err = s.DueTenants(ctx, 200, []string{"a", "b"}, []string{"acme", "later", "other"})
	if err != nil {
		t.Fatal(err)
	}
	want = []storage.DueTenant{{Tenant: "acme", Oldest: 100}, {Tenant: "other", Oldest: 10}}
	if !slices.Equal(got, want) {
		t.Fatalf("DueTenants(200, [a b], [acme later other]) = %v, want %v", got, want)
	}
	got, err = s.DueTenants(ctx, 1000, []string{"a"}, []string{"later"})
	if err != nil || !slices.Equal(got, []storage.DueTenant{{Tenant: "later", Oldest: 900}}) {
		t.Fatalf("DueTenants(1000, [a], [later]) = %v, %v; want later at 900", got, err)
	}
	if got, err := s.DueTenants(ctx, 200, nil, nil); err != nil || len(got) != 0 {
		t.Fatalf("DueTenants without names = %v, %v; want nothing", got, err)
	}
	if got, err := s.DueTenants(ctx, 200, []string{"a"}, []string{}); err != nil || len(got) != 0 {
		t.Fatalf("DueTenants with an empty tenant list = %v, %v; want nothing", got, err)
	}
}

// The read uses idx_state_name alone (MySQL: the index only, no row read),
// never a scan of argo_task: it runs at every fair-share refresh, on a
// table of any size.
func fairDueTenantsPlan(t *testing.T, e Engine) {
	s := e.Open(t)
	fairRows(t, s)
	analyze := "ANALYZE TABLE argo_task"
	if s.Driver().Name() == "sqlite" {
		analyze = "ANALYZE"
	}
	if _, err := s.DB().ExecContext(ctxFor(t), analyze); err != nil {
		t.Fatal(err)
	}
	for _, tenants := range [][]string{nil, {"acme", "globex"}} {
		q, args := storage.DueTenantsQuery([]string{"a", "b"}, tenants)
		plan := explain(t, s, q, append(args, 200)...)
		used := "key=idx_state_name "
		if s.Driver().Name() == "sqlite" {
			used = "COVERING INDEX idx_state_name "
		}
		if !strings.Contains(plan+" ", used) {
			t.Errorf("tenants %v: plan %q; want it to read idx_state_name alone", tenants, plan)
		}
		if s.Driver().Name() != "sqlite" && !strings.Contains(plan, "Using index") {
			t.Errorf("tenants %v: plan %q; want the index alone (Using index), no row read", tenants, plan)
		}
	}
}

// ClaimTenant takes one tenant's due rows from dueFrom on, oldest first,
// leased as ClaimScoped leases them; not another tenant's, not the
// tenant's rows due before dueFrom or not yet due.
func fairClaimTenant(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	var early, mid, late, notDue, other *storage.Task
	for _, p := range []struct {
		task   **storage.Task
		due    Millis
		tenant string
	}{{&early, 50, "acme"}, {&mid, 100, "acme"}, {&late, 150, "acme"}, {&notDue, 900, "acme"}, {&other, 120, "globex"}} {
		task := newTask("a", pending, p.due, 0)
		task.Tenant = p.tenant
		insert(t, s, task)
		*p.task = task
	}
	got, err := s.ClaimTenant(ctx, "w1", 200, 200, 5000, 10, []storage.ClaimGroup{{Names: []string{"a"}}}, "acme", 100)
	if err != nil {
		t.Fatal(err)
	}
	if ids := idsOf(got); !slices.Equal(ids, []int64{mid.ID, late.ID}) {
		t.Fatalf("ClaimTenant(acme, from 100) took %v; want %v (acme's due from 100, oldest first)", ids, []int64{mid.ID, late.ID})
	}
	for _, task := range []*storage.Task{mid, late} {
		if row := get(t, s, task.ID); row.State != running || row.LeaseOwner != "w1" || row.LeaseUntil != 5000 || row.ExecuteTimes != 1 {
			t.Fatalf("task %d after the claim: state %v, owner %q, lease %d, attempt %d; want running, w1, 5000, 1", task.ID, row.State, row.LeaseOwner, row.LeaseUntil, row.ExecuteTimes)
		}
	}
	for _, task := range []*storage.Task{early, notDue, other} {
		if row := get(t, s, task.ID); row.State != pending || row.LeaseOwner != "" {
			t.Fatalf("task %d (tenant %q, due %d) after the claim: state %v, owner %q; want pending, unleased", task.ID, task.Tenant, task.ExecuteTime, row.State, row.LeaseOwner)
		}
	}
	// No bound (0): every due row of the tenant.
	got, err = s.ClaimTenant(ctx, "w1", 200, 200, 5000, 10, []storage.ClaimGroup{{Names: []string{"a"}}}, "acme", 0)
	if err != nil || !slices.Equal(idsOf(got), []int64{early.ID}) {
		t.Fatalf("ClaimTenant(acme, no bound) took %v, %v; want [%d]", idsOf(got), err, early.ID)
	}
}
