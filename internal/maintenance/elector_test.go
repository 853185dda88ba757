package maintenance

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// roleHolder reads the maintenance role's row: its holder ("" if none) and expiry.
func roleHolder(t *testing.T, st *storage.Store) (string, time.Time) {
	t.Helper()
	var holder string
	var exp storage.Millis
	err := st.DB().QueryRow("SELECT holder, expires_at FROM argo_leader WHERE name = ?", MaintenanceRole).Scan(&holder, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}
	}
	if err != nil {
		t.Fatal(err)
	}
	return holder, exp.Time()
}

// countingNow is time.Now, counting its calls (each ask of the elector reads it).
func countingNow(n *atomic.Int32) func() time.Time {
	return func() time.Time { n.Add(1); return time.Now() }
}

// MaintenanceRoleTTL is max(InstanceTimeout, 3×RescueInterval): the
// holder renews every RescueInterval and keeps the role through two missed
// renewals; a long InstanceTimeout (a cluster's failure detection) wins.
func TestMaintenanceRoleTTL(t *testing.T) {
	for _, c := range []struct{ instanceTimeout, rescueInterval, want time.Duration }{
		{6 * time.Second, 10 * time.Second, 30 * time.Second},
		{time.Minute, time.Second, time.Minute},
		{0, 0, 0},
	} {
		if got := MaintenanceRoleTTL(c.instanceTimeout, c.rescueInterval); got != c.want {
			t.Errorf("MaintenanceRoleTTL(%s, %s) = %s, want %s", c.instanceTimeout, c.rescueInterval, got, c.want)
		}
	}
}

// One elector holds the role, written for TTL; a second waits; Stop hands
// the role over at once, so the second takes it long before the TTL ends.
func TestElectorHandsTheRoleOverAtStop(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		const ttl = time.Hour // only a hand-over moves the role within the test
		var gainedA, gainedB atomic.Int32
		var asksB atomic.Int32
		a := NewElector(st, ElectorConfig{Holder: "a", Interval: 10 * time.Millisecond, TTL: ttl, Gained: func() { gainedA.Add(1) }})
		b := NewElector(st, ElectorConfig{Holder: "b", Interval: 10 * time.Millisecond, TTL: ttl, Now: countingNow(&asksB), Gained: func() { gainedB.Add(1) }})
		ctx := context.Background()
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "a to hold the role", a.Leading)
		holder, exp := roleHolder(t, st)
		if holder != "a" || exp.Before(time.Now().Add(ttl-time.Minute)) || exp.After(time.Now().Add(ttl)) {
			t.Fatalf("role row: holder %q until %s, want a until about now+%s", holder, exp, ttl)
		}
		if err := b.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer b.Stop(ctx)
		waitFor(t, 5*time.Second, "b to ask 5 times", func() bool { return asksB.Load() >= 10 }) // Leading reads Now too
		if b.Leading() || gainedB.Load() != 0 {
			t.Fatal("b leads while a holds the role")
		}
		if gainedA.Load() != 1 {
			t.Fatalf("a gained the role %d times, want once (renewals are no gain)", gainedA.Load())
		}
		stopped := time.Now()
		if err := a.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if a.Leading() {
			t.Fatal("a still leads after Stop")
		}
		waitFor(t, 5*time.Second, "b to take the role handed over", b.Leading)
		t.Logf("b took the role %s after a's Stop (TTL %s)", time.Since(stopped).Round(time.Millisecond), ttl)
		if holder, _ := roleHolder(t, st); holder != "b" || gainedB.Load() != 1 {
			t.Fatalf("role held by %q, b gained it %d times", holder, gainedB.Load())
		}
		if err := b.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		checkNoServiceGoroutines(t)
		if holder, _ := roleHolder(t, st); holder != "" {
			t.Fatalf("role held by %q after every elector stopped", holder)
		}
	})
}

// Leading turns false when the role expires unrenewed (here: renewals an
// hour apart, a TTL of 300ms), not before.
func TestElectorLeadingEndsAtExpiry(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		const ttl = 300 * time.Millisecond
		taken := make(chan time.Time, 1)
		var asks atomic.Int32
		e := NewElector(st, ElectorConfig{Holder: "a", Interval: time.Hour, TTL: ttl, Now: func() time.Time {
			now := time.Now()
			if asks.Add(1) == 1 {
				taken <- now // the first call is the first ask's
			}
			return now
		}})
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer e.Stop(context.Background())
		var at time.Time
		select {
		case at = <-taken:
		case <-time.After(5 * time.Second):
			t.Fatal("no ask within 5s")
		}
		waitFor(t, 5*time.Second, "the role to be taken", e.Leading)
		waitFor(t, 5*time.Second, "Leading to end at the role's expiry", func() bool { return !e.Leading() })
		if held := time.Since(at); held < ttl {
			t.Fatalf("Leading ended %s after the take, before the TTL %s", held, ttl)
		}
	})
}

// Stop returns within its context while the elector is stuck in a callback.
func TestElectorStopBoundedByContext(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *storage.Store) {
		stuck, g := make(chan struct{}, 1), newGate()
		e := NewElector(st, ElectorConfig{Holder: "a", Interval: 10 * time.Millisecond,
			Gained: func() { stuck <- struct{}{}; g.wait() }})
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-stuck:
		case <-time.After(5 * time.Second):
			t.Fatal("role not taken within 5s")
		}
		checkStopBounded(t, e, g.open)
		if holder, _ := roleHolder(t, st); holder != "" {
			t.Fatalf("role held by %q after Stop", holder)
		}
	})
}
