package runtime

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestInspectorOverviewShards: the live instances that run tasks split the
// runtime's shards between them, as each instance computes its own share
// (splitShards); a producer-only or gone instance owns none.
func TestInspectorOverviewShards(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := freshStore(t, dsn)
		now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		for _, h := range []struct {
			id    string
			names []string
			at    time.Time
		}{
			{"i-a", []string{"x"}, now.Add(-time.Second)},
			{"i-b", []string{"x", "y"}, now.Add(-2 * time.Second)},
			{"i-producer", nil, now.Add(-time.Second)},
			{"i-gone", []string{"x"}, now.Add(-time.Minute)},
		} {
			if err := s.RecordHeartbeat(ctx, h.id, h.names, toMillis(h.at)); err != nil {
				t.Fatal(err)
			}
		}
		in := &Inspector{store: s, Now: func() time.Time { return now }, instanceTimeout: 10 * time.Second, shards: 16}
		ov, err := in.Overview(ctx, now.Add(-time.Hour), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		shards := map[string][]int{}
		for _, i := range ov.Instances {
			shards[i.ID] = i.Shards
		}
		if shards["i-producer"] != nil || shards["i-gone"] != nil {
			t.Fatalf("producer-only or gone instances own shards: %v", shards)
		}
		if want := splitShards([]string{"i-a", "i-b"}, "i-a", 16); !slices.Equal(shards["i-a"], want) {
			t.Fatalf("i-a owns %v, want %v (its own split)", shards["i-a"], want)
		}
		all := append(slices.Clone(shards["i-a"]), shards["i-b"]...)
		slices.Sort(all)
		if len(all) != 16 || len(slices.Compact(all)) != 16 {
			t.Fatalf("the live instances own %v between them; want each of the 16 shards once", all)
		}
		// An Inspector from NewInspector uses Config's defaults: 64 shards.
		ov, err = (&Inspector{store: s, Now: func() time.Time { return now }}).Overview(ctx, now.Add(-time.Hour), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, i := range ov.Instances {
			n += len(i.Shards)
		}
		if n != overviewShards {
			t.Fatalf("with the defaults the live instances own %d shards, want %d", n, overviewShards)
		}
	})
}

// TestInspectorCountUpToResolvesNameSuffix: CountUpTo takes a NameSuffix
// as List and Count do.
func TestInspectorCountUpToResolvesNameSuffix(t *testing.T) {
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := freshStore(t, dsn)
		for range 3 {
			mustInsert(t, s, sampleTask("example.com/shop.Charge", StatePending, 100, 0), sampleTask("example.com/shop.Refund", StatePending, 100, 0))
		}
		in := NewInspector(s.DB(), s.Dialect())
		if n, more, err := in.CountUpTo(ctx, Filter{NameSuffix: "shop.Charge"}, 2); err != nil || n != 2 || !more {
			t.Fatalf("CountUpTo(shop.Charge, 2) = %d, %v, %v; want 2, true", n, more, err)
		}
		if n, more, err := in.CountUpTo(ctx, Filter{NameSuffix: "Refund"}, 0); err != nil || n != 3 || more {
			t.Fatalf("CountUpTo(Refund, default) = %d, %v, %v; want 3, false", n, more, err)
		}
	})
}
