package storagetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// inspectorCases: the operators' queries and changes (argoctl, Inspector).
func inspectorCases() []testCase {
	return []testCase{
		{"ListCountFilters", inspectorFilters},
		{"Stats", inspectorStats},
		{"Discard", inspectorDiscard},
	}
}

// Every Filter criterion selects the same rows for List, Count and IDs:
// error texts match ignoring case with LIKE's wildcards taken literally;
// pages are newest id first; Count ignores paging; TaskNames and
// CountByState sum up the table.
func inspectorFilters(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	rows := []struct {
		name  string
		state storage.State
		err   string
		shard int
	}{
		{"t", dead, "Disk 100% full", 1},
		{"t", dead, "disk 1000 full", 2},
		{"t", retrying, "a_b timeout", 1},
		{"u", discarded, "axb timeout", 1},
		{"u", pending, "", 3},
		{"v", dead, "odd!char", 3},
	}
	var ids []int64 // as the database handed them out
	for i, r := range rows {
		task := newTask(r.name, r.state, storage.ToMillis(at), r.shard)
		task.ErrorMsg = r.err
		task.GmtModified = storage.ToMillis(at.Add(time.Duration(i) * time.Minute))
		insert(t, s, task)
		ids = append(ids, task.ID)
	}
	one := 1
	pick := func(is ...int) []int64 {
		var out []int64
		for _, i := range is {
			out = append(out, ids[i])
		}
		slices.Sort(out)
		slices.Reverse(out) // newest id first
		return out
	}
	for _, c := range []struct {
		what string
		f    storage.Filter
		want []int64
	}{
		{"all", storage.Filter{}, pick(0, 1, 2, 3, 4, 5)},
		{"100%: % literal", storage.Filter{ErrorContains: "100%"}, pick(0)},
		{"DISK: any case", storage.Filter{ErrorContains: "DISK"}, pick(0, 1)},
		{"a_b: _ literal", storage.Filter{ErrorContains: "a_b"}, pick(2)},
		{"!: the escape character literal", storage.Filter{ErrorContains: "d!c"}, pick(5)},
		{"timeout in shard 1", storage.Filter{ErrorContains: "timeout", Shard: &one}, pick(2, 3)},
		{"dead or pending", storage.Filter{States: []storage.State{dead, pending}}, pick(0, 1, 4, 5)},
		{"name", storage.Filter{Name: "u"}, pick(3, 4)},
		{"names", storage.Filter{Names: []string{"u", "v"}}, pick(3, 4, 5)},
		{"changed in [2m, 4m)", storage.Filter{Since: at.Add(2 * time.Minute), Until: at.Add(4 * time.Minute)}, pick(2, 3)},
		{"ids", storage.Filter{IDs: []int64{ids[0], ids[4], slices.Max(ids) + 1000}}, pick(0, 4)},
	} {
		list, err := s.List(ctx, c.f)
		if err != nil {
			t.Fatalf("%s: List: %v", c.what, err)
		}
		if !slices.Equal(idsOf(list), c.want) {
			t.Errorf("%s: List = %v, want %v", c.what, idsOf(list), c.want)
		}
		if n, err := s.Count(ctx, c.f); err != nil || n != len(c.want) {
			t.Errorf("%s: Count = %d, %v; want %d", c.what, n, err, len(c.want))
		}
		if got, err := s.IDs(ctx, c.f); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: IDs = %v, %v; want %v", c.what, got, err, c.want)
		}
	}
	all := pick(0, 1, 2, 3, 4, 5)
	page, err := s.List(ctx, storage.Filter{Limit: 2, Offset: 1})
	if err != nil || !slices.Equal(idsOf(page), all[1:3]) {
		t.Fatalf("List page (limit 2, offset 1) = %v, %v; want %v", idsOf(page), err, all[1:3])
	}
	if got, err := s.IDs(ctx, storage.Filter{Offset: 4}); err != nil || !slices.Equal(got, all[4:]) {
		t.Fatalf("IDs from offset 4 = %v, %v; want %v", got, err, all[4:])
	}
	if n, err := s.Count(ctx, storage.Filter{Limit: 1, Offset: 1}); err != nil || n != 6 {
		t.Fatalf("Count with paging = %d, %v; want 6 (paging is no criterion)", n, err)
	}
	if names, err := s.TaskNames(ctx); err != nil || !slices.Equal(names, []string{"t", "u", "v"}) {
		t.Fatalf("TaskNames = %v, %v", names, err)
	}
	byState, err := s.CountByState(ctx)
	if err != nil || len(byState) != 4 || byState[dead] != 3 || byState[retrying] != 1 || byState[discarded] != 1 || byState[pending] != 1 {
		t.Fatalf("CountByState = %v, %v", byState, err)
	}
}

// Stats counts per state and name, finds the task due longest ago, and
// rates over its window: attempts (failed ones from the history, succeeded
// ones from the task rows) and tasks finished, of them dead.
func inspectorStats(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) Millis { return storage.ToMillis(now.Add(d)) }
	oldest := newTask("a", retrying, ms(-30*time.Minute), 0)
	due := newTask("a", pending, ms(-10*time.Minute), 0)
	future := newTask("b", pending, ms(time.Hour), 0)
	okRow := newTask("b", succeeded, ms(-time.Hour), 0)
	okRow.GmtModified, okRow.ExecuteTimes = ms(-5*time.Minute), 2
	deadRow := newTask("b", dead, ms(-time.Hour), 0)
	deadRow.GmtModified = ms(-20 * time.Minute)
	oldDead := newTask("b", dead, ms(-3*time.Hour), 0)
	oldDead.GmtModified = ms(-2 * time.Hour) // outside the window
	insert(t, s, oldest, due, future, okRow, deadRow, oldDead)
	exec(t, s, "UPDATE argo_task SET attempt_started_at = ? WHERE id = ?", ms(-6*time.Minute), okRow.ID) // its success, as a finish records it
	for _, a := range []storage.Attempt{
		{TaskPK: okRow.ID, Attempt: 1, Kind: "attempt", Outcome: outcomeFailed, FinishedAt: ms(-7 * time.Minute)},
		{TaskPK: deadRow.ID, Attempt: 1, Kind: "attempt", Outcome: outcomeFailed, FinishedAt: ms(-21 * time.Minute)},
		{TaskPK: deadRow.ID, Attempt: 1, Kind: "fallback", Outcome: outcomeFailed, FinishedAt: ms(-20 * time.Minute)}, // not an attempt
		{TaskPK: oldDead.ID, Attempt: 1, Kind: "attempt", Outcome: outcomeFailed, FinishedAt: ms(-2 * time.Hour)},     // outside
	} {
		if err := s.InsertAttempt(ctx, s.DB(), &a); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Stats(ctx, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if st.Total != 6 || st.ByState[dead] != 2 || st.ByState[pending] != 2 || st.ByState[retrying] != 1 || st.ByState[succeeded] != 1 {
		t.Fatalf("Stats counts: total %d, by state %v", st.Total, st.ByState)
	}
	wantByName := []storage.NameStateCount{{Name: "a", State: pending, N: 1}, {Name: "a", State: retrying, N: 1},
		{Name: "b", State: pending, N: 1}, {Name: "b", State: succeeded, N: 1}, {Name: "b", State: dead, N: 2}}
	if !slices.Equal(st.ByName, wantByName) {
		t.Fatalf("Stats.ByName = %+v\nwant %+v", st.ByName, wantByName)
	}
	if st.OldestDue == nil || st.OldestDue.ID != oldest.ID || st.OldestDue.Lag != 30*time.Minute {
		t.Fatalf("Stats.OldestDue = %+v, want task %d, 30m late", st.OldestDue, oldest.ID)
	}
	if st.Attempts != 3 || st.FailedAttempts != 2 || st.Finished != 2 || st.Dead != 1 {
		t.Fatalf("Stats rates: %d attempts, %d failed, %d finished, %d dead; want 3, 2, 2, 1", st.Attempts, st.FailedAttempts, st.Finished, st.Dead)
	}
	if _, err := s.Stats(ctx, now, 0); err == nil {
		t.Fatal("Stats with an empty window succeeded")
	}
}

// A discard ends a pending, retrying, exhausted or dead task with its
// reason, unleased; it needs a reason argo can store unaltered (refused
// otherwise, nothing changed); running and finished tasks are refused.
func inspectorDiscard(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	var open []*storage.Task
	for _, st := range []storage.State{pending, exhausted, dead} {
		open = append(open, newTask("d", st, 1, 0))
	}
	heldRetry := leasedTask("d", retrying, 1, 0, "me", 1, 9000)
	open = append(open, heldRetry)
	leased := leasedTask("d", running, 1, 0, "w", 1, 9000)
	done := newTask("d", succeeded, 1, 0)
	insert(t, s, append(open, leased, done)...)
	target := open[0]
	for _, reason := range []string{"", "  ", "bad \xff\xfe", "nul \x00", strings.Repeat("r", storage.MaxErrorTextBytes+1)} {
		if err := s.Discard(ctx, target.ID, reason, 60); err == nil {
			t.Fatalf("discard with reason %s accepted", short(reason))
		}
		if row := get(t, s, target.ID); row.State != pending || row.DiscardReason != "" {
			t.Fatalf("a refused discard changed the task: %s %q", row.State, row.DiscardReason)
		}
	}
	reason := "duplicate of #12, é 🙂 " + strings.Repeat("ok ", 1000)
	for _, task := range open {
		if err := s.Discard(ctx, task.ID, reason, 60); err != nil {
			t.Fatalf("discard of a %s task: %v", task.State, err)
		}
		if row := get(t, s, task.ID); row.State != discarded || row.DiscardReason != reason || row.LeaseOwner != "" || row.LeaseUntil != 0 || row.GmtModified != 60 {
			t.Fatalf("discarded %s row: %s, owner %q, reason stored altered: %v", task.State, row.State, row.LeaseOwner, row.DiscardReason != reason)
		}
	}
	for _, task := range []*storage.Task{leased, done} {
		wantTransitionInvalid(t, "discard of a "+task.State.String()+" task", s.Discard(ctx, task.ID, "x", 60))
	}
	if err := s.Discard(ctx, done.ID+1000, "x", 60); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("discard of an unknown id: %v, want ErrNotFound", err)
	}
}
