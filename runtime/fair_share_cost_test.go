package runtime

import (
	"strings"
	"testing"
	"time"
)

// What the claim costs with and without fair share on a skewed backlog
// (docs/tenants-fair-share.md quotes these figures): A has 20,000 due
// tasks (2,000 on SQLite under -race), B 100 due after them; 100 claims
// of one task each, the plain claim (oldest due first) and the fair one,
// then the read of the due tenants. The plain claims take only A's; the
// fair ones alternate (B gets 50 of 100). Times are logged, not asserted.
func TestFairShareClaimCost(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := fairConfig(t, dsn, true)
		cfg.PollInterval = time.Second // the default: the due tenants read once a second
		rt := startRuntime(t, cfg)     // no handler registered: the poller claims nothing
		s := &fairStarts{}
		def := s.def("fair.cost")
		names := []string{def.Name}
		backlog := starvationBacklog
		if strings.HasPrefix(dsn, "sqlite:") && raceEnabled() {
			backlog = 2_000
		}
		now := time.Now()
		loadBacklog(t, rt, def, "A", backlog, now.Add(-time.Minute))
		loadBacklog(t, rt, def, "B", 100, now)
		const claims = 100
		lease := func() Millis { return toMillis(time.Now().Add(time.Hour)) }

		start := time.Now()
		plainB := 0
		for range claims {
			now := time.Now()
			got, err := rt.store.ClaimScoped(rt.ctx, rt.cfg.InstanceID, toMillis(now), toMillis(now), lease(), 1, rt.claimScope(names))
			if err != nil || len(got) != 1 {
				t.Fatalf("plain claim: %d tasks, %v", len(got), err)
			}
			if got[0].Tenant == "B" {
				plainB++
			}
		}
		plain := time.Since(start) / claims

		start = time.Now()
		fairB := 0
		for range claims {
			got, err := rt.claimFair(time.Now(), 1, names, names, true)
			if err != nil || len(got) != 1 {
				t.Fatalf("fair claim: %d tasks, %v", len(got), err)
			}
			if got[0].Tenant == "B" {
				fairB++
			}
		}
		fair := time.Since(start) / claims

		const reads = 20
		start = time.Now()
		for range reads {
			if _, err := rt.store.DueTenants(rt.ctx, nowMillis(), names, nil); err != nil {
				t.Fatal(err)
			}
		}
		read := time.Since(start) / reads
		t.Logf("backlog A %d + B 100 (race %v): plain claim of 1: %v (B got %d of %d); fair claim of 1: %v (B got %d of %d); due-tenants read: %v",
			backlog, raceEnabled(), plain, plainB, claims, fair, fairB, claims, read)
		if plainB != 0 {
			t.Errorf("the plain claims took %d of B's tasks; want 0 (B's are due after A's)", plainB)
		}
		if fairB < claims/2-1 || fairB > claims/2+1 {
			t.Errorf("the fair claims took %d of B's tasks of %d; want half, within 1", fairB, claims)
		}
	})
}
