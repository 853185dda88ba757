package storagetest

import (
	"slices"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// instanceScopeCases: an instance limited to some tenants claims, holds
// and gate-claims only their tasks, and its row in argo_instance says
// which tenants (migration 000012), nil (every tenant) apart from a list.
func instanceScopeCases() []testCase {
	return []testCase{
		{"ClaimTenants", scopeClaimTenants},
		{"ScheduledHoldTenants", scopeHoldTenants},
		{"FlowClaimTenants", scopeFlowTenants},
		{"InstanceTenantsStored", scopeInstanceTenants},
	}
}

// tenantTasks inserts one due pending task of name for each tenant (due
// at due) and returns them by tenant.
func tenantTasks(t *testing.T, s *storage.Store, name string, due Millis, tenants ...string) map[string]*storage.Task {
	t.Helper()
	out := map[string]*storage.Task{}
	for _, tenant := range tenants {
		task := newTask(name, pending, due, 0)
		task.Tenant = tenant
		insert(t, s, task)
		out[tenant] = task
	}
	return out
}

// A claim limited to tenants takes their due tasks only ("" being the
// tasks without a tenant); the others stay pending and unleased; a claim
// without tenants takes every tenant's.
func scopeClaimTenants(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	byTenant := tenantTasks(t, s, "a", 100, "acme", "globex", "")
	got, err := s.ClaimScoped(ctx, "w1", 200, 200, 5000, 10, []storage.ClaimGroup{{Names: []string{"a"}, Tenants: []string{"acme", ""}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{byTenant["acme"].ID, byTenant[""].ID}
	slices.Sort(want)
	ids := idsOf(got)
	slices.Sort(ids)
	if !slices.Equal(ids, want) {
		t.Fatalf("claim limited to acme and no tenant took %v, want %v", ids, want)
	}
	if row := get(t, s, byTenant["globex"].ID); row.State != pending || row.LeaseOwner != "" {
		t.Fatalf("globex's task after the limited claim: state %v, owner %q; want pending, unleased", row.State, row.LeaseOwner)
	}
	rest, err := s.ClaimScoped(ctx, "w2", 200, 200, 5000, 10, []storage.ClaimGroup{{Names: []string{"a"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(idsOf(rest), []int64{byTenant["globex"].ID}) {
		t.Fatalf("an unlimited claim took %v, want globex's %d", idsOf(rest), byTenant["globex"].ID)
	}
}

// Holding scheduled calls limited to a tenant holds that tenant's only.
func scopeHoldTenants(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	byTenant := tenantTasks(t, s, "a", 1000, "acme", "globex")
	held, err := s.HoldScheduled(ctx, "w1", 500, 2000, 3000, 10, []storage.ClaimGroup{{Names: []string{"a"}, Tenants: []string{"globex"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(idsOf(held), []int64{byTenant["globex"].ID}) {
		t.Fatalf("hold limited to globex held %v, want %d", idsOf(held), byTenant["globex"].ID)
	}
	if row := get(t, s, byTenant["acme"].ID); row.LeaseOwner != "" {
		t.Fatalf("acme's scheduled call held by %q", row.LeaseOwner)
	}
}

// A gated claim limited to a tenant takes that tenant's tasks only.
func scopeFlowTenants(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	byTenant := tenantTasks(t, s, "print", 1, "acme", "globex")
	r, err := s.ClaimFlow(ctx, storage.FlowClaim{Group: "printer", Names: []string{"print"}, Policy: storage.FlowPolicy{Limit: 10},
		Owner: "w1", Now: 10, LeaseUntil: 600_000, Limit: 10, Tenants: []string{"acme"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(idsOf(r.Tasks), []int64{byTenant["acme"].ID}) {
		t.Fatalf("gated claim limited to acme took %v, want %d", idsOf(r.Tasks), byTenant["acme"].ID)
	}
	if row := get(t, s, byTenant["globex"].ID); row.State != pending || row.LeaseOwner != "" {
		t.Fatalf("globex's task after the limited gated claim: state %v, owner %q", row.State, row.LeaseOwner)
	}
}

// RecordInstance stores the tenants an instance is limited to, and
// LiveInstances reads them back: nil for every tenant, a list (even one of
// only "") as written; a later heartbeat replaces them.
func scopeInstanceTenants(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	for id, tenants := range map[string][]string{"all": nil, "two": {"acme", "globex"}, "untenanted": {""}} {
		if err := s.RecordInstance(ctx, id, []string{"a"}, tenants, 100); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordHeartbeat(ctx, "plain", []string{"a"}, 100); err != nil {
		t.Fatal(err)
	}
	read := func() map[string][]string {
		live, err := s.LiveInstances(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		for _, in := range live {
			out[in.ID] = in.Tenants
		}
		return out
	}
	got := read()
	if got["all"] != nil || got["plain"] != nil || !slices.Equal(got["two"], []string{"acme", "globex"}) || got["untenanted"] == nil || !slices.Equal(got["untenanted"], []string{""}) {
		t.Fatalf("tenants read back %q; want all and plain nil, two [acme globex], untenanted [\"\"]", got)
	}
	if err := s.RecordInstance(ctx, "two", []string{"a"}, nil, 200); err != nil {
		t.Fatal(err)
	}
	if got := read(); got["two"] != nil {
		t.Fatalf("after a heartbeat without tenants, instance two reads %q, want nil", got["two"])
	}
	if _, _, err := s.KnownTaskNames(ctx, 0); err != nil {
		t.Fatalf("KnownTaskNames reads argo_instance with its tenants column: %v", err)
	}
}
