package storagetest

import (
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// flowGrantCases: the slot grants of a concurrency cap (storage/flow_grants.go).
func flowGrantCases() []testCase {
	return []testCase{
		{"GrantedWhileCapCannotBind", flowGrantWhileRoom},
		{"GrantRefusedNearCapDropsOwn", flowGrantRefused},
		{"GrantOnlyForCapAlone", flowGrantCapAlone},
		{"OperatorOpenDropsGrants", flowGrantOperatorOpen},
		{"StoppingInstanceDropsItsGrant", flowGrantDropped},
	}
}

// grantClaim is a locked claim of group "printer" (names "print") by owner
// at now, asking for a grant of slots until until.
func grantClaim(t *testing.T, s *storage.Store, p storage.FlowPolicy, owner string, now Millis, n, slots int, until Millis) storage.FlowClaimResult {
	t.Helper()
	r, err := s.ClaimFlow(ctxFor(t), storage.FlowClaim{Group: "printer", Names: []string{"print"}, Policy: p, Owner: owner,
		Now: now, LeaseUntil: now + 600_000, Limit: n, GrantSlots: slots, GrantUntil: until})
	if err != nil {
		t.Fatalf("claim by %s at %d: %v", owner, now, err)
	}
	return r
}

// printerGrants is the grants column of group "printer", parsed.
func printerGrants(t *testing.T, s *storage.Store) map[string]storage.FlowGrant {
	t.Helper()
	groups, err := s.FlowGroups(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]storage.FlowGrant{}
	for _, g := range groups {
		if g.Group == "printer" {
			for _, gr := range g.FlowGrants() {
				out[gr.Owner] = gr
			}
		}
	}
	return out
}

// While the running rows, the other instances' grants and the asker's slots
// fit within the cap, a claim grants the asker its slots (written in the
// row); every later locked claim counts the live grants as running, so it
// cannot admit into the room a holder may fill without the lock; once the
// grants have run out, the count is exact again.
func flowGrantWhileRoom(t *testing.T, e Engine) {
	s := e.Open(t)
	pendingTasks(t, s, "print", 30, 1)
	p := storage.FlowPolicy{Limit: 10}
	a := grantClaim(t, s, p, "a", 10, 2, 4, 1000)
	if len(a.Tasks) != 2 || a.GrantUntil != 1000 {
		t.Fatalf("a: took %d, grant until %d; want 2 and a grant until 1000 (0 running + 4 slots within 10)", len(a.Tasks), a.GrantUntil)
	}
	if g := printerGrants(t, s)["a"]; g.Slots != 4 || g.Until != 1000 {
		t.Fatalf("a's grant in the row: %+v, want 4 slots until 1000", g)
	}
	// b: 2 running + a's 4 slots: 4 more may start, and b's 4 slots fit.
	b := grantClaim(t, s, p, "b", 20, 100, 4, 1020)
	if len(b.Tasks) != 4 || b.GrantUntil != 1020 {
		t.Fatalf("b: took %d, grant until %d; want 4 (cap 10 - 2 running - a's 4 slots) and a grant", len(b.Tasks), b.GrantUntil)
	}
	// c: 6 running + 8 granted slots: nothing, and no grant.
	c := grantClaim(t, s, p, "c", 30, 100, 4, 1030)
	if len(c.Tasks) != 0 || c.GrantUntil != 0 {
		t.Fatalf("c: took %d, grant until %d; want nothing (6 running + 8 granted slots, cap 10)", len(c.Tasks), c.GrantUntil)
	}
	// a's grant has run out, b's has not: 6 running + 4.
	if got := flowClaim(t, s, "printer", []string{"print"}, p, "c", 1001, 100).Tasks; len(got) != 0 {
		t.Fatalf("with b's grant live, c took %d, want 0", len(got))
	}
	// Every grant has run out: exact again, and the run-out ones dropped.
	if got := flowClaim(t, s, "printer", []string{"print"}, p, "c", 2000, 100).Tasks; len(got) != 4 {
		t.Fatalf("with no live grant, c took %d, want 4 (cap 10 - 6 running)", len(got))
	}
	if g := printerGrants(t, s); len(g) != 0 {
		t.Fatalf("grants left in the row after they ran out: %+v", g)
	}
}

// A claim that finds the cap too close for the asker's slots grants nothing
// and drops the asker's own grant, so that the others' claims are exact
// again; a claim that finds nothing due decides nothing.
func flowGrantRefused(t *testing.T, e Engine) {
	s := e.Open(t)
	pendingTasks(t, s, "print", 20, 1)
	p := storage.FlowPolicy{Limit: 10}
	if r := grantClaim(t, s, p, "a", 10, 1, 4, 5000); r.GrantUntil != 5000 {
		t.Fatalf("a: grant until %d, want 5000", r.GrantUntil)
	}
	// b takes 5 without asking: 1 running + a's 4 slots + 5 = 10.
	if got := flowClaim(t, s, "printer", []string{"print"}, p, "b", 20, 100).Tasks; len(got) != 5 {
		t.Fatalf("b took %d, want 5", len(got))
	}
	// a claims 3 within its grant, without the lock (9 running).
	plain, err := s.ClaimScoped(ctxFor(t), "a", 25, 25, 600_025, 3, []storage.ClaimGroup{{Names: []string{"print"}}})
	if err != nil || len(plain) != 3 {
		t.Fatalf("a's plain claim: %d, %v; want 3", len(plain), err)
	}
	// a renews: 9 running + its 4 slots > 10: one more may start, and a's
	// grant is dropped.
	r := grantClaim(t, s, p, "a", 30, 100, 4, 5030)
	if len(r.Tasks) != 1 || r.GrantUntil != 0 {
		t.Fatalf("a's renewal with 9 running: took %d, grant until %d; want 1 and no grant", len(r.Tasks), r.GrantUntil)
	}
	if g := printerGrants(t, s); len(g) != 0 {
		t.Fatalf("a's refused renewal left grants %+v, want none", g)
	}
	// Nothing due for a name the group does not have: nothing decided.
	r, err = s.ClaimFlow(ctxFor(t), storage.FlowClaim{Group: "printer", Names: []string{"print-none"}, Policy: p, Owner: "z",
		Now: 40, LeaseUntil: 600_040, Limit: 10, GrantSlots: 1, GrantUntil: 5040})
	if err != nil || r.GrantUntil != 0 || len(r.Tasks) != 0 {
		t.Fatalf("claim with nothing due: %+v, %v; want nothing and no grant", r, err)
	}
}

// Only a group whose sole gate is its cap takes grants: a rate limit or a
// retry budget is decided per claim (and a grant asked for is refused).
func flowGrantCapAlone(t *testing.T, e Engine) {
	s := e.Open(t)
	pendingTasks(t, s, "print", 10, 1)
	for _, p := range []storage.FlowPolicy{
		{Limit: 100, Rate: 1000},
		{Limit: 100, RetryBudget: &storage.RetryBudgetPolicy{Share: 0.5, WindowMs: 1000, MinRetries: 1}},
		{Limit: 100, Breaker: &storage.BreakerPolicy{Failures: 5, WindowMs: 1000, CooldownMs: 1000, MaxCooldownMs: 1000, ProbeTimeoutMs: 1000}},
	} {
		if r := grantClaim(t, s, p, "a", 10, 1, 4, 5000); len(r.Tasks) != 1 || r.GrantUntil != 0 {
			t.Fatalf("policy %+v: took %d, grant until %d; want 1 and no grant", p, len(r.Tasks), r.GrantUntil)
		}
	}
	if g := printerGrants(t, s); len(g) != 0 {
		t.Fatalf("grants %+v, want none", g)
	}
}

// An operator's open drops every grant (their holders learn it at their
// next renewal, which it refuses while the breaker is open).
func flowGrantOperatorOpen(t *testing.T, e Engine) {
	s := e.Open(t)
	pendingTasks(t, s, "print", 10, 1)
	p := storage.FlowPolicy{Limit: 100}
	grantClaim(t, s, p, "a", 10, 1, 4, 5000)
	grantClaim(t, s, p, "b", 11, 1, 4, 5000)
	if g := printerGrants(t, s); len(g) != 2 {
		t.Fatalf("grants %+v, want a's and b's", g)
	}
	if err := s.SetBreaker(ctxFor(t), "printer", true, "op", "", 20); err != nil {
		t.Fatal(err)
	}
	if g := printerGrants(t, s); len(g) != 0 {
		t.Fatalf("after an operator's open: grants %+v, want none", g)
	}
	if r := grantClaim(t, s, p, "a", 30, 1, 4, 5030); len(r.Tasks) != 0 || r.GrantUntil != 0 {
		t.Fatalf("renewal while forced open: took %d, grant until %d; want nothing", len(r.Tasks), r.GrantUntil)
	}
}

// An instance that stops drops its own grant (the others' stay), and the
// next claims count only the running rows and the grants left; a group
// with no row, or no grant of the owner, is no error and writes nothing.
func flowGrantDropped(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	pendingTasks(t, s, "print", 20, 1)
	p := storage.FlowPolicy{Limit: 10}
	grantClaim(t, s, p, "a", 10, 1, 4, 5000)
	grantClaim(t, s, p, "b", 11, 1, 4, 5000)
	if err := s.DropFlowGrant(ctx, "printer", "a", 20); err != nil {
		t.Fatal(err)
	}
	if g := printerGrants(t, s); len(g) != 1 || g["b"].Slots != 4 {
		t.Fatalf("after a's drop: grants %+v, want b's only", g)
	}
	// 2 running + b's 4 slots: 4 may start.
	if got := flowClaim(t, s, "printer", []string{"print"}, p, "c", 30, 100).Tasks; len(got) != 4 {
		t.Fatalf("after a's drop c took %d, want 4", len(got))
	}
	before := count(t, s, "SELECT lock_seq FROM argo_flow WHERE group_name = ?", "printer")
	if err := s.DropFlowGrant(ctx, "printer", "a", 40); err != nil {
		t.Fatal(err)
	}
	if err := s.DropFlowGrant(ctx, "no-such-group", "a", 40); err != nil {
		t.Fatalf("drop in a group with no row: %v", err)
	}
	if after := count(t, s, "SELECT lock_seq FROM argo_flow WHERE group_name = ?", "printer"); after != before {
		t.Fatalf("a drop with no grant to drop wrote the row (lock_seq %d → %d)", before, after)
	}
}
