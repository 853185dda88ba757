package runtime

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestInspectorFilter checks the filter SQL on both databases: error text
// matches ignore case and treat LIKE wildcards literally, paging is newest
// first, and RequeueWhere/DiscardWhere touch only the states they may.
func TestInspectorFilter(t *testing.T) {
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		db, dialect, err := OpenDB(dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := Migrate(ctx, db, dialect); err != nil {
			t.Fatal(err)
		}
		in := NewInspector(db, dialect)
		in.SingleOperatorDiscard = true
		at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		in.Now = func() time.Time { return at }
		rows := []struct {
			state State
			err   string
			shard int
		}{
			{StateDead, "Disk 100% full", 1},
			{StateDead, "disk 1000 full", 2},
			{StateRetrying, "a_b timeout", 1},
			{StateDiscarded, "axb timeout", 1},
			{StatePending, "", 3},
		}
		var ids []int64 // as the database handed them out (not 1, 2, 3 on a Galera cluster)
		for i, r := range rows {
			task := &Task{Name: "t", State: r.state, ExecuteTime: toMillis(at), Parameter: "{}", ErrorMsg: r.err, ShardKey: r.shard,
				GmtCreate: toMillis(at), GmtModified: toMillis(at.Add(time.Duration(i) * time.Minute))}
			if err := in.store.Insert(ctx, nil, task); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, task.ID)
		}
		missing := slices.Max(ids) + 1000
		count := func(f Filter) int {
			t.Helper()
			n, err := in.Count(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		one := 1
		for _, c := range []struct {
			f    Filter
			want int
		}{
			{Filter{}, 5},
			{Filter{ErrorContains: "100%"}, 1},
			{Filter{ErrorContains: "DISK"}, 2},
			{Filter{ErrorContains: "a_b"}, 1},
			{Filter{ErrorContains: "timeout", Shard: &one}, 2},
			{Filter{States: []State{StateDead, StatePending}}, 3},
			{Filter{Since: at.Add(2 * time.Minute), Until: at.Add(4 * time.Minute)}, 2},
			{Filter{IDs: []int64{ids[0], ids[4], missing}}, 2},
		} {
			if got := count(c.f); got != c.want {
				t.Errorf("Count(%+v) = %d, want %d", c.f, got, c.want)
			}
		}
		page, err := in.List(ctx, Filter{Limit: 2, Offset: 1})
		if err != nil || len(page) != 2 || page[0].ID != ids[3] || page[1].ID != ids[2] {
			t.Fatalf("List page = %v, %v; want ids %d, %d (the 4th and 3rd inserted)", page, err, ids[3], ids[2])
		}
		if n, err := in.RequeueWhere(ctx, Filter{States: []State{StateRetrying}}, false); err != nil || n != 0 {
			t.Fatalf("RequeueWhere(retrying) = %d, %v; want 0", n, err)
		}
		if n, err := in.RequeueWhere(ctx, Filter{Shard: &one}, true); err != nil || n != 2 {
			t.Fatalf("RequeueWhere(shard 1, dry run) = %d, %v; want 2", n, err)
		}
		if n, err := in.RequeueWhere(ctx, Filter{Shard: &one}, false); err != nil || n != 2 {
			t.Fatalf("RequeueWhere(shard 1) = %d, %v; want 2", n, err)
		}
		if _, err := in.DiscardWhere(ctx, Filter{}, " ", false); err == nil {
			t.Fatal("DiscardWhere without a reason succeeded")
		}
		if n, err := in.DiscardWhere(ctx, Filter{}, "cleanup", false); err != nil || n != 5 {
			t.Fatalf("DiscardWhere(all) = %d, %v; want 5", n, err)
		}
		// The two requeued tasks stay as they were (one dead, one
		// discarded) beside their two new tasks, which were discarded.
		st, err := in.Stats(ctx, time.Hour)
		if err != nil || st.ByState[StateDiscarded] != 6 || st.ByState[StateDead] != 1 || st.Total != 7 {
			t.Fatalf("Stats = %+v, %v", st, err)
		}
	})
}
