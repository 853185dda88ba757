package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/argo-retry/argo/internal/storage"
)

// flowCases: the gated claim of a flow group (cap, rate, breaker) and the
// release of its slots.
func flowCases() []testCase {
	return []testCase{
		{"CapHeldByRacingClaimers", flowCapRacing},
		{"SlotFreedOnceByFinishOrRescue", flowSlotRelease},
		{"CapCountsEveryMemberName", flowCapMembers},
		{"RateBucket", flowRateBucket},
		{"BreakerOpensProbesCloses", flowBreaker},
		{"BreakerProbeLost", flowProbeLost},
		{"BreakerReleaseOutlastsBacklog", flowReleaseOutlastsBacklog},
		{"OperatorOpensAndCloses", flowOperator},
		{"BreakerByHandRecordedInTrail", flowOperatorTrail},
		{"TakeSkipsCandidateChangedSinceRead", flowTakeFence},
		{"RetryBudgetBoundsRetriesByFirstAttempts", flowRetryBudget},
		{"RetryBudgetCountsClaimsOutOfOrder", flowRetryBudgetClaimsOutOfOrder},
		{"ClaimOfFullGroupWritesNothing", flowFullClaimWritesNothing},
	}
}

// flowClaim claims for owner at now within policy p (limit 100 unless n).
func flowClaim(t *testing.T, s *storage.Store, group string, names []string, p storage.FlowPolicy, owner string, now Millis, n int) storage.FlowClaimResult {
	t.Helper()
	r, err := s.ClaimFlow(ctxFor(t), storage.FlowClaim{Group: group, Names: names, Policy: p, Owner: owner, Now: now, LeaseUntil: now + 600_000, Limit: n})
	if err != nil {
		t.Fatalf("claim of group %s at %d: %v", group, now, err)
	}
	return r
}

// pendingTasks inserts n pending tasks of name due at due.
func pendingTasks(t *testing.T, s *storage.Store, name string, n int, due Millis) []*storage.Task {
	t.Helper()
	var out []*storage.Task
	for i := 0; i < n; i++ {
		task := newTask(name, pending, due, i%4)
		insert(t, s, task)
		out = append(out, task)
	}
	return out
}

// Eight claimers race on one group capped at 4, each holding what it took
// for a moment before finishing it: the attempts held at once, counted
// after each claim commits and before each finish is written (so never
// fewer than the rows running), never exceed 4, and every task runs.
func flowCapRacing(t *testing.T, e Engine) {
	s := e.Open(t)
	const tasks, capN, claimers = 48, 4, 8
	pendingTasks(t, s, "print", tasks, 1)
	p := storage.FlowPolicy{Limit: capN}
	var held, peak, done atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, claimers)
	ctx := ctxFor(t)
	for w := 0; w < claimers; w++ {
		wg.Add(1)
		go func(owner string) {
			defer wg.Done()
			for done.Load() < tasks && ctx.Err() == nil {
				r, err := s.ClaimFlow(ctx, storage.FlowClaim{Group: "printer", Names: []string{"print"}, Policy: p, Owner: owner, Now: 10, LeaseUntil: 600_000, Limit: 3})
				if err != nil {
					errc <- err
					return
				}
				n := held.Add(int64(len(r.Tasks)))
				for {
					old := peak.Load()
					if n <= old || peak.CompareAndSwap(old, n) {
						break
					}
				}
				for _, c := range r.Tasks {
					held.Add(-1)
					if err := s.Finish(ctx, success(c), 20); err != nil {
						errc <- err
						return
					}
					done.Add(1)
				}
			}
		}(fmt.Sprintf("w%d", w))
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("claimers ran out of time with %d of %d tasks done", done.Load(), tasks)
	}
	if got := peak.Load(); got > capN {
		t.Fatalf("%d attempts held at once, cap %d", got, capN)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task WHERE task_status = ?", succeeded); n != tasks {
		t.Fatalf("%d tasks succeeded, want %d", n, tasks)
	}
}

// A full group admits nothing; a finish frees one slot, a rescue of a lost
// lease one slot, and a second rescue of the same lease none.
func flowSlotRelease(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	pendingTasks(t, s, "print", 10, 1)
	p := storage.FlowPolicy{Limit: 3}
	names := []string{"print"}
	first := flowClaim(t, s, "printer", names, p, "a", 10, 100).Tasks
	if len(first) != 3 {
		t.Fatalf("first claim took %d, want the cap 3", len(first))
	}
	if got := flowClaim(t, s, "printer", names, p, "b", 11, 100).Tasks; len(got) != 0 {
		t.Fatalf("a full group admitted %d", len(got))
	}
	if err := s.Finish(ctx, success(first[0]), 12); err != nil {
		t.Fatal(err)
	}
	if got := flowClaim(t, s, "printer", names, p, "b", 13, 100).Tasks; len(got) != 1 {
		t.Fatalf("after one finish the claim took %d, want 1", len(got))
	}
	lost := first[1]
	rf := failure(lost, retrying, 1_000_000, "lease expired")
	rf.History.Outcome = outcomeLeaseExpired
	if err := s.Rescue(ctx, rf, lost.LeaseUntil, 14); err != nil {
		t.Fatal(err)
	}
	if err := s.Rescue(ctx, rf, lost.LeaseUntil, 15); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("second rescue of one lease: %v, want ErrLeaseLost", err)
	}
	if got := flowClaim(t, s, "printer", names, p, "c", 16, 100).Tasks; len(got) != 1 {
		t.Fatalf("after one rescue (and its repeat) the claim took %d, want 1", len(got))
	}
	if got := flowClaim(t, s, "printer", names, p, "c", 17, 100).Tasks; len(got) != 0 {
		t.Fatalf("a full group admitted %d", len(got))
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task WHERE task_status = ?", running); n != 3 {
		t.Fatalf("%d rows running, want the cap 3", n)
	}
}

// The cap counts the running rows of every name of the group, including
// names only another instance runs (they are in the group's members).
func flowCapMembers(t *testing.T, e Engine) {
	s := e.Open(t)
	pendingTasks(t, s, "print-a", 3, 1)
	pendingTasks(t, s, "print-b", 3, 1)
	p := storage.FlowPolicy{Limit: 4}
	if got := flowClaim(t, s, "printer", []string{"print-a"}, p, "x", 10, 100).Tasks; len(got) != 3 {
		t.Fatalf("instance x took %d of print-a, want 3", len(got))
	}
	if got := flowClaim(t, s, "printer", []string{"print-b"}, p, "y", 11, 100).Tasks; len(got) != 1 {
		t.Fatalf("instance y took %d of print-b with 3 of print-a running under cap 4, want 1", len(got))
	}
	// A group with nothing due is not written (its poll is one plain read).
	if got := flowClaim(t, s, "idle", []string{"nothing-due"}, p, "y", 12, 100).Tasks; len(got) != 0 {
		t.Fatalf("idle group took %d", len(got))
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_flow WHERE group_name = 'idle'"); n != 0 {
		t.Fatalf("the poll of an idle group wrote its row")
	}
	// Another group with the same names' cap is its own.
	pendingTasks(t, s, "scan", 2, 1)
	if got := flowClaim(t, s, "scanner", []string{"scan"}, storage.FlowPolicy{Limit: 1}, "y", 12, 100).Tasks; len(got) != 1 {
		t.Fatalf("another group took %d, want 1", len(got))
	}
}

// The rate limit is a token bucket: full (burst) at first, refilled at the
// rate, never above the burst; over any span the group starts at most
// burst + rate × span attempts, and an empty bucket says when the next
// token comes.
func flowRateBucket(t *testing.T, e Engine) {
	s := e.Open(t)
	pendingTasks(t, s, "mail", 200, 1)
	p := storage.FlowPolicy{Rate: 10, Burst: 5}
	names := []string{"mail"}
	if got := flowClaim(t, s, "mail", names, p, "a", 1000, 100).Tasks; len(got) != 5 {
		t.Fatalf("first claim took %d, want the burst 5", len(got))
	}
	r := flowClaim(t, s, "mail", names, p, "b", 1000, 100)
	if len(r.Tasks) != 0 || r.WakeAt != 1100 {
		t.Fatalf("empty bucket: took %d, wake at %d; want 0 and 1100 (one token per 100 ms)", len(r.Tasks), r.WakeAt)
	}
	if got := flowClaim(t, s, "mail", names, p, "a", 1500, 100).Tasks; len(got) != 5 {
		t.Fatalf("after 500 ms took %d, want 5", len(got))
	}
	if got := flowClaim(t, s, "mail", names, p, "a", 60_000, 100).Tasks; len(got) != 5 {
		t.Fatalf("after a long pause took %d, want the burst 5 (not more)", len(got))
	}
	// Claims every 30 ms for 6 s: at most burst + 10/s × 6 s.
	total := 0
	for now := Millis(60_030); now <= 66_000; now += 30 {
		total += len(flowClaim(t, s, "mail", names, p, "a", now, 100).Tasks)
	}
	if total > 5+60 || total < 55 {
		t.Fatalf("6 s of claims took %d, want between 55 and 65 (10/s, burst 5 spent already)", total)
	}
}

// The breaker opens after its failures, admits nothing during the
// cool-down, then one probe; the probe's failure reopens it for twice the
// cool-down, its success closes it; an outcome of another task while a
// probe is out changes nothing; after closing, tasks are released at the
// release rate.
func flowBreaker(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	pendingTasks(t, s, "call", 40, 1)
	b := &storage.BreakerPolicy{Failures: 3, Ratio: 0.5, WindowMs: 10_000, CooldownMs: 1000, MaxCooldownMs: 10_000, ProbeTimeoutMs: 5000, ReleaseRate: 2, ReleaseForMs: 5000}
	p := storage.FlowPolicy{Breaker: b}
	names := []string{"call"}
	outcome := func(id int64, ok bool, now Millis) storage.BreakerState {
		t.Helper()
		st, err := s.FlowOutcome(ctx, "down", p, id, ok, now)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	got := flowClaim(t, s, "down", names, p, "a", 100, 5).Tasks
	if len(got) != 5 {
		t.Fatalf("closed breaker admitted %d, want 5", len(got))
	}
	// 2 successes, 2 failures: ratio 0.5 but only 2 failures (< 3).
	outcome(got[0].ID, true, 110)
	outcome(got[1].ID, true, 110)
	outcome(got[2].ID, false, 120)
	if st := outcome(got[3].ID, false, 130); st != storage.BreakerClosed {
		t.Fatalf("2 failures opened the breaker (%s)", st)
	}
	if st := outcome(got[4].ID, false, 140); st != storage.BreakerOpen {
		t.Fatalf("3 failures of 5 left the breaker %s, want open", st)
	}
	r := flowClaim(t, s, "down", names, p, "a", 500, 100)
	if len(r.Tasks) != 0 || r.Breaker != storage.BreakerOpen || r.WakeAt != 1140 {
		t.Fatalf("open breaker: took %d, %s, wake %d; want 0, open, 1140", len(r.Tasks), r.Breaker, r.WakeAt)
	}
	r = flowClaim(t, s, "down", names, p, "a", 1140, 100)
	if len(r.Tasks) != 1 || r.Breaker != storage.BreakerHalfOpen {
		t.Fatalf("after the cool-down: took %d, %s; want one probe, half-open", len(r.Tasks), r.Breaker)
	}
	probe := r.Tasks[0]
	if got := flowClaim(t, s, "down", names, p, "b", 1200, 100).Tasks; len(got) != 0 {
		t.Fatalf("a second probe started while one is out (%d)", len(got))
	}
	if st := outcome(got[0].ID, true, 1210); st != storage.BreakerHalfOpen {
		t.Fatalf("a straggler's success moved the breaker to %s", st)
	}
	if st := outcome(probe.ID, false, 1300); st != storage.BreakerOpen {
		t.Fatalf("failed probe: %s, want open", st)
	}
	if r := flowClaim(t, s, "down", names, p, "a", 2299, 100); len(r.Tasks) != 0 || r.WakeAt != 3300 {
		t.Fatalf("reopened: took %d, wake %d; want 0 and 3300 (cool-down doubled to 2 s)", len(r.Tasks), r.WakeAt)
	}
	r = flowClaim(t, s, "down", names, p, "a", 3300, 100)
	if len(r.Tasks) != 1 {
		t.Fatalf("second probe: took %d", len(r.Tasks))
	}
	if st := outcome(r.Tasks[0].ID, true, 3400); st != storage.BreakerClosed {
		t.Fatalf("probe succeeded: %s, want closed", st)
	}
	// Release at 2/s, one at a time, for 5 s from 3400.
	total := 0
	for now := Millis(3400); now < 8400; now += 50 {
		n := len(flowClaim(t, s, "down", names, p, "a", now, 100).Tasks)
		if n > 1 {
			t.Fatalf("release let %d start at once at %d", n, now)
		}
		total += n
	}
	if total < 9 || total > 10 {
		t.Fatalf("5 s of release started %d, want 10 at 2/s", total)
	}
	// ReleaseFor is over, but tasks due before the close still wait: the
	// release goes on (flowReleaseOutlastsBacklog has the rest).
	if got := flowClaim(t, s, "down", names, p, "a", 8400, 100).Tasks; len(got) > 1 {
		t.Fatalf("after ReleaseFor, with the backlog waiting, the claim took %d at once, want at most 1", len(got))
	}
}

// The release outlasts ReleaseFor while tasks due before the close wait
// (a backlog larger than ReleaseRate × ReleaseFor): still one at a time at
// the release rate after it, and not all at once; once that backlog has
// drained, tasks due after the close start without the release's bound.
// The same with a retry budget (its claim reads its candidates after
// Admit, so it reads the oldest one for the release).
func flowReleaseOutlastsBacklog(t *testing.T, e Engine) {
	for _, budget := range []*storage.RetryBudgetPolicy{nil, {Share: 1, WindowMs: 600_000, MinRetries: 1000}} {
		t.Run(fmt.Sprintf("budget=%v", budget != nil), func(t *testing.T) {
			s := e.Open(t)
			ctx := ctxFor(t)
			const backlog = 20
			pendingTasks(t, s, "call", backlog, 1)
			p := storage.FlowPolicy{RetryBudget: budget, Breaker: &storage.BreakerPolicy{Failures: 1, WindowMs: 10_000, CooldownMs: 1000, ReleaseRate: 2, ReleaseForMs: 1000}}
			names := []string{"call"}
			taken := len(flowClaim(t, s, "down", names, p, "a", 10, 1).Tasks) // the group's row
			if err := s.SetBreaker(ctx, "down", true, "op", "", 20); err != nil {
				t.Fatal(err)
			}
			if err := s.SetBreaker(ctx, "down", false, "op", "", 1000); err != nil {
				t.Fatal(err)
			}
			claimOne := func(now Millis) int {
				t.Helper()
				n := len(flowClaim(t, s, "down", names, p, "a", now, 100).Tasks)
				if n > 1 {
					t.Fatalf("the release let %d start at once at %d (%d of %d taken before)", n, now, taken, backlog)
				}
				taken += n
				return n
			}
			for now := Millis(1000); now < 2000; now += 100 { // ReleaseFor
				claimOne(now)
			}
			// 3 s past ReleaseFor, 18 of the backlog wait: the old rule
			// started them all here.
			if n := claimOne(5000); n != 1 {
				t.Fatalf("3 s after ReleaseFor, with the backlog waiting, took %d, want 1 (a full bucket of one)", n)
			}
			in2s := 0
			for now := Millis(5100); now <= 7000; now += 100 {
				in2s += claimOne(now)
			}
			if in2s < 3 || in2s > 4 {
				t.Fatalf("2 s of claims after ReleaseFor took %d, want 4 at 2/s", in2s)
			}
			now := Millis(7000)
			for i := 0; taken < backlog; i++ {
				if i > 100 {
					t.Fatalf("the backlog did not drain at 2/s: %d of %d taken by %d", taken, backlog, now)
				}
				now += 500
				claimOne(now)
			}
			// Drained: tasks due after the close are not held by the release.
			pendingTasks(t, s, "call", 5, now)
			if got := flowClaim(t, s, "down", names, p, "a", now+10, 100).Tasks; len(got) != 5 {
				t.Fatalf("after the backlog drained, 5 tasks due after the close: took %d, want all 5", len(got))
			}
		})
	}
}

// A probe never reported (its instance died) is replaced by another once
// its timeout passes.
func flowProbeLost(t *testing.T, e Engine) {
	s := e.Open(t)
	pendingTasks(t, s, "call", 5, 1)
	b := &storage.BreakerPolicy{Failures: 1, WindowMs: 10_000, CooldownMs: 1000, ProbeTimeoutMs: 3000}
	p := storage.FlowPolicy{Breaker: b}
	names := []string{"call"}
	got := flowClaim(t, s, "down", names, p, "a", 100, 1).Tasks
	if _, err := s.FlowOutcome(ctxFor(t), "down", p, got[0].ID, false, 200); err != nil {
		t.Fatal(err)
	}
	if got := flowClaim(t, s, "down", names, p, "a", 1200, 100).Tasks; len(got) != 1 {
		t.Fatalf("first probe: %d", len(got))
	}
	if got := flowClaim(t, s, "down", names, p, "a", 4199, 100).Tasks; len(got) != 0 {
		t.Fatalf("a probe started before the first one timed out (%d)", len(got))
	}
	if got := flowClaim(t, s, "down", names, p, "b", 4200, 100).Tasks; len(got) != 1 {
		t.Fatalf("after the probe's timeout took %d, want a new probe", len(got))
	}
}

// An operator's open admits nothing, whatever time passes or outcomes
// come; an operator's close admits again (through the release). A group
// that never claimed cannot be set.
func flowOperator(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	if err := s.SetBreaker(ctx, "nobody", true, "op", "", 1); !errors.Is(err, storage.ErrFlowGroupUnknown) {
		t.Fatalf("open of an unknown group: %v", err)
	}
	pendingTasks(t, s, "call", 10, 1)
	ex := newTask("call", exhausted, 1, 0)
	ex.ExecuteTimes = 3
	insert(t, s, ex)
	p := storage.FlowPolicy{Limit: 100}
	names := []string{"call"}
	got := flowClaim(t, s, "g", names, p, "a", 10, 1).Tasks
	if len(got) != 1 {
		t.Fatalf("claim took %d", len(got))
	}
	if err := s.SetBreaker(ctx, "g", true, "op", "", 20); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FlowOutcome(ctx, "g", p, got[0].ID, true, 30); err != nil {
		t.Fatal(err)
	}
	r := flowClaim(t, s, "g", names, p, "a", 1_000_000, 100)
	if len(r.Tasks) != 1 || r.Tasks[0].ID != ex.ID || r.Tasks[0].State != fallingBack || r.Breaker != storage.BreakerForcedOpen {
		t.Fatalf("forced open: took %v (%s); want only the exhausted task's fallback, which is not gated", idsOf(r.Tasks), r.Breaker)
	}
	if err := s.SetBreaker(ctx, "g", false, "op", "", 1_000_001); err != nil {
		t.Fatal(err)
	}
	if got := flowClaim(t, s, "g", names, p, "a", 1_000_002, 100).Tasks; len(got) != 9 {
		t.Fatalf("closed by hand: took %d, want the 9 waiting", len(got))
	}
	groups, err := s.FlowGroups(ctx)
	if err != nil || len(groups) != 1 || groups[0].Group != "g" || groups[0].OpenedCount != 1 || groups[0].Members != "call" {
		t.Fatalf("flow groups: %+v, %v", groups, err)
	}
}

// A candidate changed between the claim's read and its take (discarded
// here, as a concurrent writer would) is not taken; the others are, and
// the claim returns exactly the rows it took.
func flowTakeFence(t *testing.T, e Engine) {
	s := e.Open(t)
	tasks := pendingTasks(t, s, "print", 4, 1)
	changed := tasks[1].ID
	// The group's row is there, as after any earlier claim (a group's first
	// claim creates it, and takes the ordinary path even where claims are
	// batched).
	exec(t, s, "INSERT INTO argo_flow (group_name, members) VALUES ('printer', '')")
	r, err := s.ClaimFlow(ctxFor(t), storage.FlowClaim{Group: "printer", Names: []string{"print"}, Policy: storage.FlowPolicy{Limit: 10},
		Owner: "a", Now: 10, LeaseUntil: 600_000, Limit: 10,
		BeforeTake: func(ctx context.Context, tx *sqlx.Tx, _ []*storage.Task) error {
			const discard = "UPDATE argo_task SET task_status = ?, discard_reason = 'gone' WHERE id = ?"
			if tx == nil { // the batched claim: a concurrent writer's own transaction
				_, err := s.DB().ExecContext(ctx, discard, discarded, changed)
				return err
			}
			_, err := tx.ExecContext(ctx, discard, discarded, changed)
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{tasks[0].ID, tasks[2].ID, tasks[3].ID}
	if got := idsOf(r.Tasks); !slices.Equal(got, want) {
		t.Fatalf("took %v, want %v (not the row changed since the read)", got, want)
	}
	for _, c := range r.Tasks {
		if row := get(t, s, c.ID); row.State != running || row.LeaseOwner != "a" || row.ExecuteTimes != 1 || *row != *c {
			t.Fatalf("taken row as stored %+v, as returned %+v", row, c)
		}
	}
	if row := get(t, s, changed); row.State != discarded || row.LeaseOwner != "" {
		t.Fatalf("changed row was taken: %+v", row)
	}
}

// A breaker opened or closed by hand is recorded in the group's operator
// trail with who, when and why, in the same transaction; a change without
// an operator, or with a reason argo cannot store unaltered, is refused and
// changes nothing; a task's trail does not show the group's actions.
func flowOperatorTrail(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	pendingTasks(t, s, "call", 1, 1)
	flowClaim(t, s, "g", []string{"call"}, storage.FlowPolicy{Limit: 5}, "a", 10, 1)
	if err := s.SetBreaker(ctx, "g", true, " ", "", 20); !errors.Is(err, storage.ErrNoOperator) {
		t.Fatalf("open without an operator: %v, want ErrNoOperator", err)
	}
	if err := s.SetBreaker(ctx, "g", true, "alice", "bad\x00reason", 20); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("open with a NUL in the reason: %v", err)
	}
	if groups, err := s.FlowGroups(ctx); err != nil || groups[0].Breaker != storage.BreakerClosed {
		t.Fatalf("after refused opens: %+v, %v; want the breaker closed", groups, err)
	}
	if err := s.SetBreaker(ctx, "g", true, "alice", "downstream on fire", 30); err != nil {
		t.Fatal(err)
	}
	if err := s.SetBreaker(ctx, "g", false, "bob", "", 40); err != nil {
		t.Fatal(err)
	}
	trail, err := s.FlowActions(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if len(trail) != 2 ||
		trail[0].Action != storage.ActionBreakerOpen || trail[0].Operator != "alice" || trail[0].Reason != "downstream on fire" || trail[0].At != 30 || trail[0].Group != "g" ||
		trail[1].Action != storage.ActionBreakerClose || trail[1].Operator != "bob" || trail[1].At != 40 {
		t.Fatalf("group trail %+v: want alice's open (with her reason) at 30, then bob's close at 40", trail)
	}
	if other, err := s.FlowActions(ctx, "other"); err != nil || len(other) != 0 {
		t.Fatalf("trail of another group: %+v, %v", other, err)
	}
	if tasks, err := s.OperatorActions(ctx, 1); err != nil || len(tasks) != 0 {
		t.Fatalf("a task's trail shows %+v, %v; want none", tasks, err)
	}
}
