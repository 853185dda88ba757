package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// consoleReadCases: the reads of the operator's console (console_reads.go,
// overview.go): keyset pages, the substring, unique-key and combined
// filters, the bounded count, and the overview's figures.
func consoleReadCases() []testCase {
	return []testCase{
		{"KeysetPagesCoverEachRowOnce", consoleKeysetPages},
		{"FiltersCombine", consoleFiltersCombine},
		{"NameContainsWildcardsAreLiteral", consoleNameWildcards},
		{"UniqueKeyExact", consoleUniqueKey},
		{"CountUpToBounded", consoleCountUpTo},
		{"OverviewFigures", consoleOverview},
		{"OverviewBucketsCapped", consoleOverviewCapped},
		{"IndexesMigratedAndProbed", consoleIndexes},
	}
}

// listIDs lists the ids f selects, in the order List returns them, and
// checks that Count and CountUpTo (unbounded enough) agree with it.
func listIDs(t *testing.T, s *storage.Store, f storage.Filter) []int64 {
	t.Helper()
	ctx := ctxFor(t)
	got, err := s.List(ctx, f)
	if err != nil {
		t.Fatalf("List(%+v): %v", f, err)
	}
	ids := idsOf(got)
	if f.Limit == 0 {
		if n, err := s.Count(ctx, f); err != nil || n != len(ids) {
			t.Fatalf("Count(%+v) = %d, %v; List found %d", f, n, err, len(ids))
		}
		if n, more, err := s.CountUpTo(ctx, f, 1000); err != nil || more || n != len(ids) {
			t.Fatalf("CountUpTo(%+v, 1000) = %d, %v, %v; List found %d", f, n, more, err, len(ids))
		}
	}
	return ids
}

// Pages of 7 by BeforeID (the last id of the page before) cover every row
// that was there when the listing began exactly once, newest first, while
// rows are inserted between pages (they have newer ids: a listing that
// restarts shows them).
func consoleKeysetPages(t *testing.T, e Engine) {
	s := e.Open(t)
	var want []int64
	for i := range 25 {
		task := newTask(fmt.Sprintf("n%d", i%3), pending, 100, 0)
		insert(t, s, task)
		want = append(want, task.ID)
	}
	slices.Sort(want)
	slices.Reverse(want)
	var seen []int64
	f := storage.Filter{Limit: 7}
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatalf("more than 10 pages of 7 for 25 rows: seen %v", seen)
		}
		page := listIDs(t, s, f)
		if len(page) == 0 {
			break
		}
		if len(page) > 7 {
			t.Fatalf("page %d has %d rows, want at most 7", pages, len(page))
		}
		seen = append(seen, page...)
		f.BeforeID = page[len(page)-1]
		// Rows written between pages must not shift the next page.
		insert(t, s, newTask("n0", pending, 100, 0), newTask("n1", dead, 100, 0))
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("keyset pages listed %v\nwant every row there at the start, once, newest first: %v", seen, want)
	}
	all := listIDs(t, s, storage.Filter{})
	if len(all) != 25+2*4 {
		t.Fatalf("after paging, %d rows; want 25 + the 8 inserted between pages", len(all))
	}
	if (storage.Filter{BeforeID: 5}).Empty() || (storage.Filter{NameContains: "x"}).Empty() || (storage.Filter{UniqueKey: "k"}).Empty() {
		t.Fatal("a filter with BeforeID, NameContains or UniqueKey reports Empty: argoctl would take it for no criterion")
	}
}

// NameContains, UniqueKey and BeforeID combine with each other and with
// the older criteria (state, tenant, exact name) by AND; NameContains
// ignores case.
func consoleFiltersCombine(t *testing.T, e Engine) {
	s := e.Open(t)
	type row struct {
		name, tenant, key string
		state             storage.State
	}
	rows := []row{
		{"billing.Charge", "eu", "k1", dead},
		{"billing.Refund", "eu", "k2", dead},
		{"billing.Charge", "us", "k3", pending},
		{"mail.Send", "eu", "k1", dead},
		{"billing.Charge", "eu", "", pending},
		{"Billing.CHARGE.v2", "eu", "", dead},
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		task := newTask(r.name, r.state, 100, 0)
		task.Tenant = r.tenant
		if r.key != "" {
			task.UniqueKey = nullKey(r.key)
		}
		insert(t, s, task)
		ids[i] = task.ID
	}
	pick := func(is ...int) []int64 {
		var out []int64
		for _, i := range is {
			out = append(out, ids[i])
		}
		slices.Sort(out)
		slices.Reverse(out)
		return out
	}
	for _, c := range []struct {
		what string
		f    storage.Filter
		want []int64
	}{
		{"name contains charge (any case)", storage.Filter{NameContains: "charge"}, pick(0, 2, 4, 5)},
		{"name contains CHARGE", storage.Filter{NameContains: "CHARGE"}, pick(0, 2, 4, 5)},
		{"charge, dead", storage.Filter{NameContains: "charge", States: []storage.State{dead}}, pick(0, 5)},
		{"charge, dead, tenant eu", storage.Filter{NameContains: "charge", States: []storage.State{dead}, Tenant: "eu"}, pick(0, 5)},
		{"charge, tenant us", storage.Filter{NameContains: "charge", Tenant: "us"}, pick(2)},
		{"key k1", storage.Filter{UniqueKey: "k1"}, pick(0, 3)},
		{"key k1, name contains mail", storage.Filter{UniqueKey: "k1", NameContains: "mail"}, pick(3)},
		{"key k1, exact name", storage.Filter{UniqueKey: "k1", Name: "billing.Charge"}, pick(0)},
		{"billing, before the 4th row", storage.Filter{NameContains: "billing.", BeforeID: ids[3]}, pick(0, 1, 2)},
		{"dead, before the 5th row, tenant eu", storage.Filter{States: []storage.State{dead}, BeforeID: ids[4], Tenant: "eu"}, pick(0, 1, 3)},
		{"no such substring", storage.Filter{NameContains: "nomatch"}, nil},
		{"charge among names", storage.Filter{NameContains: "charge", Names: []string{"billing.Charge", "mail.Send"}}, pick(0, 2, 4)},
		{"charge, names without it", storage.Filter{NameContains: "charge", Names: []string{"billing.Refund", "mail.Send"}}, nil},
		{"key k1 among names", storage.Filter{UniqueKey: "k1", Names: []string{"mail.Send", "billing.Refund"}}, pick(3)},
	} {
		if got := listIDs(t, s, c.f); !slices.Equal(got, c.want) {
			t.Errorf("%s: listed %v, want %v", c.what, got, c.want)
		}
	}
	// The page by key combines with Limit: the two newest below a bound.
	if got := listIDs(t, s, storage.Filter{NameContains: "billing", BeforeID: ids[5], Limit: 2}); !slices.Equal(got, pick(4, 2)) {
		t.Errorf("billing, before the 6th row, limit 2: listed %v, want %v", got, pick(4, 2))
	}
}

// The user's text is matched literally: %, _, \ and ! (LIKE's wildcards,
// MySQL's default escape, and the escape argo uses) select only names that
// contain them.
func consoleNameWildcards(t *testing.T, e Engine) {
	s := e.Open(t)
	names := []string{"a%b", "a_b", `a\b`, "a!b", "axb", "aXXb", "ab"}
	byName := map[string]int64{}
	for _, n := range names {
		task := newTask(n, pending, 100, 0)
		insert(t, s, task)
		byName[n] = task.ID
	}
	for _, c := range []struct {
		text string
		want []string
	}{
		{"%", []string{"a%b"}},
		{"_", []string{"a_b"}},
		{`\`, []string{`a\b`}},
		{"!", []string{"a!b"}},
		{"a%b", []string{"a%b"}},
		{"a_b", []string{"a_b"}},
		{`a\b`, []string{`a\b`}},
		{`a\%b`, nil},
		{"!%", nil},
		{"x", []string{"axb", "aXXb"}},
	} {
		var want []int64
		for _, n := range c.want {
			want = append(want, byName[n])
		}
		slices.Sort(want)
		slices.Reverse(want)
		if got := listIDs(t, s, storage.Filter{NameContains: c.text}); !slices.Equal(got, want) {
			t.Errorf("NameContains %q: listed %v, want the tasks named %q (%v)", c.text, got, c.want, want)
		}
	}
}

// UniqueKey selects the tasks whose key is exactly the text: not a prefix,
// not another case, not with a trailing space, across task names.
func consoleUniqueKey(t *testing.T, e Engine) {
	s := e.Open(t)
	var want []int64
	for _, k := range []struct{ name, key string }{{"a", "k1"}, {"b", "k1"}, {"a", "k10"}, {"a", "K1"}, {"a", "k1 "}, {"a", ""}} {
		task := newTask(k.name, pending, 100, 0)
		if k.key != "" {
			task.UniqueKey = nullKey(k.key)
		}
		insert(t, s, task)
		if k.key == "k1" {
			want = append(want, task.ID)
		}
	}
	slices.Reverse(want)
	if got := listIDs(t, s, storage.Filter{UniqueKey: "k1"}); !slices.Equal(got, want) {
		t.Fatalf("UniqueKey k1: listed %v, want %v", got, want)
	}
	if got := listIDs(t, s, storage.Filter{UniqueKey: "k"}); len(got) != 0 {
		t.Fatalf("UniqueKey k (a prefix): listed %v, want none", got)
	}
}

// CountUpTo is exact up to max and reports more above it, reading at most
// max+1 rows; max <= 0 is DefaultCountBound.
func consoleCountUpTo(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	for i := range 6 {
		state := pending
		if i%2 == 0 {
			state = dead
		}
		insert(t, s, newTask("a", state, 100, 0))
	}
	for _, c := range []struct {
		f        storage.Filter
		max      int
		wantN    int
		wantMore bool
	}{
		{storage.Filter{}, 10, 6, false},
		{storage.Filter{}, 6, 6, false},
		{storage.Filter{}, 5, 5, true},
		{storage.Filter{}, 1, 1, true},
		{storage.Filter{}, 0, 6, false},
		{storage.Filter{States: []storage.State{dead}}, 3, 3, false},
		{storage.Filter{States: []storage.State{dead}}, 2, 2, true},
		{storage.Filter{Limit: 1, Offset: 4}, 10, 6, false}, // paging is no criterion
	} {
		n, more, err := s.CountUpTo(ctx, c.f, c.max)
		if err != nil || n != c.wantN || more != c.wantMore {
			t.Errorf("CountUpTo(%+v, %d) = %d, %v, %v; want %d, %v", c.f, c.max, n, more, err, c.wantN, c.wantMore)
		}
	}
	if storage.DefaultCountBound != 10000 {
		t.Errorf("DefaultCountBound = %d; the console shows 10000+", storage.DefaultCountBound)
	}
}

// The overview's figures against known rows: counts (purgeable states over
// the window only), outcomes and retry lateness per bucket, dead-letter
// growth, instances with their holds, and the names due that no live
// instance runs.
func consoleOverview(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) Millis { return storage.ToMillis(now.Add(d)) }
	row := func(name, tenant string, state storage.State, due, modified time.Duration) *storage.Task {
		task := newTask(name, state, ms(due), 0)
		task.Tenant, task.GmtModified = tenant, ms(modified)
		insert(t, s, task)
		return task
	}
	row("a", "t1", pending, -5*time.Minute, -5*time.Minute) // due, no live instance runs a
	row("b", "", pending, time.Hour, -5*time.Minute)        // not due: b is no unrunnable name
	held := leasedTask("c", retrying, ms(time.Minute), 0, "i-live", 1, ms(time.Minute))
	held.Tenant, held.GmtModified = "t1", ms(-time.Minute)
	lapsed := leasedTask("c", retrying, ms(-time.Minute), 0, "i-gone", 1, ms(-time.Minute)) // its hold ran out
	lapsed.Tenant, lapsed.GmtModified = "t1", ms(-2*time.Minute)
	insert(t, s, held, lapsed)
	ok := row("a", "t1", succeeded, -time.Hour, -55*time.Minute)
	exec(t, s, "UPDATE argo_task SET execute_times = 2, attempt_started_at = ? WHERE id = ?", ms(-55*time.Minute), ok.ID)
	// Succeeded at its second attempt before migration 000002 recorded
	// attempt starts: no lateness to tell.
	unrecorded := row("a", "t1", succeeded, -time.Hour, -54*time.Minute)
	exec(t, s, "UPDATE argo_task SET execute_times = 2 WHERE id = ?", unrecorded.ID)
	row("a", "t1", succeeded, -3*time.Hour, -2*time.Hour) // outside the window
	deadRow := row("b", "t2", dead, -time.Hour, -15*time.Minute)
	row("b", "t2", dead, -4*time.Hour, -3*time.Hour) // dead before the window: counted, no growth
	rec := row("a", "", recovered, -time.Hour, -25*time.Minute)
	row("a", "", discarded, -time.Hour, -5*time.Minute)
	row("a", "", discarded, -4*time.Hour, -3*time.Hour) // outside the window
	row("b", "", succeeded, -time.Hour, time.Minute)    // written by a clock ahead of now: counted, in no bucket
	for _, a := range []storage.Attempt{
		{TaskPK: ok.ID, Attempt: 1, Kind: "attempt", Outcome: outcomeFailed, StartedAt: ms(-57 * time.Minute), FinishedAt: ms(-56 * time.Minute), BackoffMs: 30_000},
		{TaskPK: unrecorded.ID, Attempt: 1, Kind: "attempt", Outcome: outcomeFailed, StartedAt: ms(-57 * time.Minute), FinishedAt: ms(-56 * time.Minute), BackoffMs: 30_000},
		// A retry started before the window and ended in it: its failure
		// counts in the window, its lateness in no bucket.
		{TaskPK: held.ID, Attempt: 1, Kind: "attempt", Outcome: outcomeFailed, StartedAt: ms(-63 * time.Minute), FinishedAt: ms(-62 * time.Minute), BackoffMs: 60_000},
		{TaskPK: held.ID, Attempt: 2, Kind: "attempt", Outcome: outcomeFailed, StartedAt: ms(-61 * time.Minute), FinishedAt: ms(-59 * time.Minute)},
		// A fallback run after the first attempt (then requeued): no attempt a retry follows.
		{TaskPK: lapsed.ID, Attempt: 1, Kind: "fallback", Outcome: outcomeFailed, StartedAt: ms(-41 * time.Minute), FinishedAt: ms(-40 * time.Minute)},
		{TaskPK: deadRow.ID, Attempt: 1, Kind: "attempt", Outcome: outcomeFailed, StartedAt: ms(-31 * time.Minute), FinishedAt: ms(-30 * time.Minute), BackoffMs: 60_000},
		{TaskPK: deadRow.ID, Attempt: 2, Kind: "attempt", Outcome: outcomeFailed, StartedAt: ms(-28 * time.Minute), FinishedAt: ms(-27 * time.Minute)},
		{TaskPK: deadRow.ID, Attempt: 2, Kind: "fallback", Outcome: outcomeFailed, StartedAt: ms(-27 * time.Minute), FinishedAt: ms(-26 * time.Minute)}, // no attempt
		{TaskPK: rec.ID, Attempt: 1, Kind: "attempt", Outcome: outcomeSucceeded, StartedAt: ms(-25 * time.Minute), FinishedAt: ms(-24 * time.Minute)},   // no failure
		{TaskPK: rec.ID, Attempt: 1, Kind: "attempt", Outcome: outcomeFailed, StartedAt: ms(-2 * time.Hour), FinishedAt: ms(-119 * time.Minute)},        // before the window
		// A retry run 30 s before its due time (run now by an operator): late by 0.
		{TaskPK: lapsed.ID, Attempt: 1, Kind: "attempt", Outcome: outcomeFailed, StartedAt: ms(-23 * time.Minute), FinishedAt: ms(-22 * time.Minute), BackoffMs: 60_000},
		{TaskPK: lapsed.ID, Attempt: 2, Kind: "attempt", Outcome: outcomeFailed, StartedAt: ms(-21*time.Minute - 30*time.Second), FinishedAt: ms(-21 * time.Minute)},
	} {
		if err := s.InsertAttempt(ctx, s.DB(), &a); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordHeartbeat(ctx, "i-live", []string{"c", "x"}, ms(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordHeartbeat(ctx, "i-gone", []string{"a"}, ms(-time.Hour)); err != nil {
		t.Fatal(err)
	}

	ov, err := s.Overview(ctx, now, now.Add(-time.Hour), 10*time.Minute, now.Add(-10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !ov.At.Equal(now) || !ov.Since.Equal(now.Add(-time.Hour)) || ov.Bucket != 10*time.Minute {
		t.Errorf("overview at %s since %s in %s; want %s, %s, 10m", ov.At, ov.Since, ov.Bucket, now, now.Add(-time.Hour))
	}
	wantCounts := []storage.NameTenantStateCount{
		{Name: "a", Tenant: "", State: recovered, N: 1}, {Name: "a", Tenant: "", State: discarded, N: 1},
		{Name: "a", Tenant: "t1", State: pending, N: 1}, {Name: "a", Tenant: "t1", State: succeeded, N: 2},
		{Name: "b", Tenant: "", State: pending, N: 1}, {Name: "b", Tenant: "", State: succeeded, N: 1},
		{Name: "b", Tenant: "t2", State: dead, N: 2},
		{Name: "c", Tenant: "t1", State: retrying, N: 2},
	}
	if !slices.Equal(ov.Counts, wantCounts) {
		t.Errorf("Counts = %+v\nwant %+v (succeeded, recovered and discarded within the window only; dead all)", ov.Counts, wantCounts)
	}
	wantBuckets := make([]storage.OutcomeBucket, 6)
	for i := range wantBuckets {
		wantBuckets[i].Start = now.Add(-time.Hour + time.Duration(i)*10*time.Minute)
	}
	wantBuckets[0].Succeeded, wantBuckets[0].Retried, wantBuckets[0].FailedAttempts = 2, 2, 3
	wantBuckets[3].FailedAttempts, wantBuckets[3].Retried, wantBuckets[3].Recovered = 4, 2, 1
	wantBuckets[4].Dead = 1
	if !slices.EqualFunc(ov.Buckets, wantBuckets, func(a, b storage.OutcomeBucket) bool {
		return a.Start.Equal(b.Start) && a == (storage.OutcomeBucket{Start: a.Start, Succeeded: b.Succeeded, Recovered: b.Recovered, Dead: b.Dead, FailedAttempts: b.FailedAttempts, Retried: b.Retried})
	}) {
		t.Errorf("Buckets = %+v\nwant %+v", ov.Buckets, wantBuckets)
	}
	if len(ov.Lateness) != 6 {
		t.Fatalf("%d lateness buckets, want 6", len(ov.Lateness))
	}
	for i, l := range ov.Lateness {
		want := storage.LatenessBucket{Start: wantBuckets[i].Start}
		switch i {
		case 0: // the succeeded retry: started 30 s after its due time
			want.Retries, want.P50, want.P95 = 1, 30*time.Second, 30*time.Second
		case 3: // a failed retry due 29 min ago, started 28 min ago; one run early
			want.Retries, want.P50, want.P95 = 2, 0, time.Minute
		}
		if !l.Start.Equal(want.Start) || l.Retries != want.Retries || l.P50 != want.P50 || l.P95 != want.P95 {
			t.Errorf("Lateness[%d] = %+v, want %+v", i, l, want)
		}
	}
	if want := []storage.NameTenantCount{{Name: "b", Tenant: "t2", N: 1}}; !slices.Equal(ov.DeadGrowth, want) {
		t.Errorf("DeadGrowth = %+v, want %+v", ov.DeadGrowth, want)
	}
	if len(ov.Instances) != 2 {
		t.Fatalf("Instances = %+v, want i-gone and i-live", ov.Instances)
	}
	gone, live := ov.Instances[0], ov.Instances[1]
	if gone.ID != "i-gone" || gone.Live || gone.HeldRetries != 0 || !slices.Equal(gone.Names, []string{"a"}) || !gone.Heartbeat.Equal(now.Add(-time.Hour)) {
		t.Errorf("Instances[0] = %+v, want i-gone, not live, no holds (its hold ran out), names [a]", gone)
	}
	if live.ID != "i-live" || !live.Live || live.HeldRetries != 1 || !slices.Equal(live.Names, []string{"c", "x"}) || !live.Heartbeat.Equal(now.Add(-time.Second)) {
		t.Errorf("Instances[1] = %+v, want i-live, live, 1 held retry, names [c x]", live)
	}
	if want := []string{"a"}; !slices.Equal(ov.UnrunnableNames, want) {
		t.Errorf("UnrunnableNames = %v, want %v (b has no task due; c runs on i-live)", ov.UnrunnableNames, want)
	}

	for _, bad := range []struct {
		since  time.Time
		bucket time.Duration
	}{{now.Add(-time.Hour), 0}, {now, time.Minute}, {now.Add(time.Hour), time.Minute}} {
		if _, err := s.Overview(ctx, now, bad.since, bad.bucket, now); err == nil {
			t.Errorf("Overview since %s in buckets of %s: no error", bad.since, bad.bucket)
		}
	}
}

// A bucket narrower than the window allows is widened: at most
// MaxOverviewBuckets buckets, covering the window.
func consoleOverviewCapped(t *testing.T, e Engine) {
	s := e.Open(t)
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	ov, err := s.Overview(context.Background(), now, now.Add(-24*time.Hour), time.Second, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(ov.Buckets) != storage.MaxOverviewBuckets || len(ov.Lateness) != storage.MaxOverviewBuckets || ov.Bucket != 5*time.Minute {
		t.Fatalf("24h in 1s buckets: %d buckets (%d lateness) of %s; want %d of 5m", len(ov.Buckets), len(ov.Lateness), ov.Bucket, storage.MaxOverviewBuckets)
	}
	if last := ov.Buckets[len(ov.Buckets)-1].Start.Add(ov.Bucket); last.Before(now) {
		t.Fatalf("the buckets end at %s, before now %s", last, now)
	}
}

// indexColumns lists the columns of an index of table, in order.
func indexColumns(t *testing.T, s *storage.Store, table, index string) []string {
	t.Helper()
	q := "SELECT column_name FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ? ORDER BY seq_in_index"
	args := []any{table, index}
	if s.Dialect() == "sqlite" {
		q, args = "SELECT name FROM pragma_index_info(?) ORDER BY seqno", []any{index}
	}
	rows, err := s.DB().QueryContext(ctxFor(t), q, args...)
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
	return cols
}

// Migration 000011 creates the overview's two indexes; applying it again
// (another process did meanwhile) is no error; without an index the schema
// check names 000011.
func consoleIndexes(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	if got := indexColumns(t, s, "argo_task", "idx_state_name"); !slices.Equal(got, []string{"task_status", "task_id", "tenant", "execute_time"}) {
		t.Fatalf("idx_state_name columns %v; want [task_status task_id tenant execute_time]", got)
	}
	if got := indexColumns(t, s, "argo_task_attempt", "idx_attempt_finished"); !slices.Equal(got, []string{"finished_at"}) {
		t.Fatalf("idx_attempt_finished columns %v; want [finished_at]", got)
	}
	exec(t, s, "DELETE FROM argo_schema_migrations WHERE version = 11")
	steps, err := storage.MigrateSteps(ctx, s.DB(), s.Dialect())
	if err != nil {
		t.Fatalf("000011 applied over its own indexes: %v", err)
	}
	if len(steps) != 1 || !steps[0].AlreadyPresent {
		t.Fatalf("migrating again recorded %+v; want 000011 alone, already present", steps)
	}
	dropIndex := "ALTER TABLE argo_task DROP INDEX idx_state_name"
	if s.Dialect() == "sqlite" {
		dropIndex = "DROP INDEX idx_state_name"
	}
	exec(t, s, dropIndex)
	var se *storage.SchemaError
	if err := s.CheckSchema(ctx); !errors.As(err, &se) || se.Migration != "000011_console_reads.up.sql" {
		t.Fatalf("without idx_state_name: %v; want a SchemaError naming 000011_console_reads.up.sql", err)
	}
	// With an earlier migration missing too, the check names the earlier
	// one, whatever the order the drivers list their probes in.
	exec(t, s, "DROP TABLE argo_flow")
	if err := s.CheckSchema(ctx); !errors.As(err, &se) || se.Migration != "000006_flow_control.up.sql" {
		t.Fatalf("without argo_flow and idx_state_name: %v; want a SchemaError naming 000006_flow_control.up.sql, the earlier file", err)
	}
}
