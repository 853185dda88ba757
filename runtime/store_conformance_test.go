package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
)

// The storage conformance suite: every statement of the store, run against
// SQLite and MariaDB alike (River's driver tests are the pattern).

func openTestStore(t *testing.T, dsn string) *storage.Store {
	t.Helper()
	db, dialect, err := OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	for range 2 { // twice: migrations are idempotent
		if _, err := Migrate(ctx, db, dialect); err != nil {
			t.Fatal(err)
		}
	}
	s := newStore(db, dialect)
	if err := s.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func sampleTask(name string, state State, due Millis, shard int) *Task {
	return &Task{Name: name, State: state, MaxAttempts: 3, ExecuteTime: due, Parameter: `{"a":1}`, PerformanceWay: Immediate, ThreadWay: Async,
		ShardKey: shard, RetryPolicyJSON: encodePolicy(fastPolicy(3)), GmtCreate: due, GmtModified: due}
}

func mustInsert(t *testing.T, s *storage.Store, tasks ...*Task) {
	t.Helper()
	for _, task := range tasks {
		if err := s.Insert(context.Background(), nil, task); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStoreConformance(t *testing.T) {
	forEachConformanceBackend(t, func(t *testing.T, backend testdb.Backend) {
		// Each subtest gets its own database.
		var dsn string
		fresh := func(t *testing.T) { dsn = backend.FreshDSN(t) }
		t.Run("InsertGetRoundTrip", func(t *testing.T) {
			fresh(t)
			s := openTestStore(t, dsn)
			in := sampleTask("pkg.F", StatePending, 1000, 5)
			in.ParameterTypes, in.MethodName, in.MethodSignName = "string,int", "F", "func(string, int) error"
			in.AlertExpression, in.AlertActionBeanName, in.FallbackClassName = "executeTimes > 1", "page", "fb"
			mustInsert(t, s, in)
			got, err := s.Get(context.Background(), in.ID)
			if err != nil {
				t.Fatal(err)
			}
			if *got != *in {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, in)
			}
			if _, err := s.Get(context.Background(), in.ID+1000); !errors.Is(err, ErrNotFound) {
				t.Fatalf("missing id: %v", err)
			}
		})

		t.Run("ClaimDueOrderLimitShards", func(t *testing.T) {
			fresh(t)
			s := openTestStore(t, dsn)
			ctx := context.Background()
			now := Millis(10_000)
			due3 := sampleTask("a", StatePending, 3000, 1)
			due1 := sampleTask("a", StateRetrying, 1000, 2)
			due2 := sampleTask("a", StatePending, 2000, 1)
			future := sampleTask("a", StatePending, 20_000, 1)
			done := sampleTask("a", StateSucceeded, 500, 1)
			dead := sampleTask("a", StateDead, 500, 1)
			exhausted := sampleTask("a", StateExhausted, 4000, 3)
			exhausted.ExecuteTimes = 3
			mustInsert(t, s, due3, due1, due2, future, done, dead, exhausted)

			got, err := s.ClaimDue(ctx, "w1", now, now+5000, 2, []string{"a"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[0].ID != due1.ID || got[1].ID != due2.ID {
				t.Fatalf("claimed %v, want the two oldest due", ids(got))
			}
			for _, c := range got {
				if c.State != StateRunning || c.LeaseOwner != "w1" || c.LeaseUntil != now+5000 || c.ExecuteTimes != 1 {
					t.Fatalf("claimed row %+v", c)
				}
				row, _ := s.Get(ctx, c.ID)
				if row.State != StateRunning || row.ExecuteTimes != 1 || row.LeaseOwner != "w1" {
					t.Fatalf("stored claimed row %+v", row)
				}
			}
			got, _ = s.ClaimDue(ctx, "w2", now, now+5000, 10, []string{"a"}, []int{2, 3})
			if len(got) != 1 || got[0].ID != exhausted.ID || got[0].State != StateFallingBack || got[0].ExecuteTimes != 3 {
				t.Fatalf("shard-filtered claim %+v, want only the exhausted task as falling_back with execute_times 3", got)
			}
			if got, _ := s.ClaimDue(ctx, "w2", now, now+5000, 10, []string{"a"}, []int{}); len(got) != 0 {
				t.Fatal("no owned shards claimed rows")
			}
			got, _ = s.ClaimDue(ctx, "w3", now, now+5000, 10, []string{"a"}, nil)
			if len(got) != 1 || got[0].ID != due3.ID {
				t.Fatalf("last claim %v, want only %d (future, finished and leased rows stay)", ids(got), due3.ID)
			}
		})

		t.Run("ConcurrentClaimsAreExclusive", func(t *testing.T) {
			fresh(t)
			s := openTestStore(t, dsn)
			const rows, claimers = 400, 8
			for i := range rows {
				mustInsert(t, s, sampleTask("c", StatePending, Millis(i), i%8))
			}
			// Every wait is bounded: the claims share a deadline, a claimer
			// stops after more claims than there are rows (a claim that
			// does not take its rows would return them for ever), problems
			// are collected without blocking, and the claimers are awaited
			// with a deadline of their own.
			const timeout = 60 * time.Second
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			var (
				mu       sync.Mutex
				seen     = map[int64]string{}
				problems []string
				claims   int
			)
			problem := func(format string, args ...any) {
				if len(problems) < 20 {
					problems = append(problems, fmt.Sprintf(format, args...))
				}
			}
			var wg sync.WaitGroup
			for w := range claimers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					owner := fmt.Sprintf("w%d", w)
					for {
						got, err := s.ClaimDue(ctx, owner, 1_000_000, 2_000_000, 7, []string{"c"}, nil)
						mu.Lock()
						claims++
						if err != nil {
							problem("%s: claim: %v", owner, err)
						}
						for _, c := range got {
							if prev, dup := seen[c.ID]; dup {
								problem("task %d claimed by %s and %s", c.ID, prev, owner)
							}
							seen[c.ID] = owner
						}
						stop := err != nil || len(got) == 0 || claims > rows+claimers
						if claims > rows+claimers {
							problem("%s: still claiming after %d claims of %d rows: claimed rows are claimable again", owner, claims, rows)
						}
						mu.Unlock()
						if stop {
							return
						}
					}
				}()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(timeout + 10*time.Second):
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("claimers still running after %s (a claim blocked past its context): %d claims, %d rows claimed; problems: %q", timeout+10*time.Second, claims, len(seen), problems)
			}
			if len(problems) > 0 {
				t.Fatalf("%d claims: %s", claims, strings.Join(problems, "; "))
			}
			if len(seen) != rows {
				t.Fatalf("claimed %d rows, want %d", len(seen), rows)
			}
		})

		// A lone finish takes one round trip on MySQL (a multi-statement
		// transaction on the onetrip pool) and a transaction elsewhere; a
		// batch is one transaction. Every path keeps the same fence.
		finishPaths := map[string]func(s *storage.Store, ctx context.Context, f finishing, now Millis) error{
			"lone": func(s *storage.Store, ctx context.Context, f finishing, now Millis) error {
				return s.Finish(ctx, f, now)
			},
			"lone via transaction": func(s *storage.Store, ctx context.Context, f finishing, now Millis) error {
				s.DisableOnetrip()
				return s.Finish(ctx, f, now)
			},
			"batch": func(s *storage.Store, ctx context.Context, f finishing, now Millis) error {
				errs, err := s.FinishBatch(ctx, []finishing{f}, now)
				if err != nil {
					return err
				}
				return errs[0]
			},
		}
		for path, finish := range finishPaths {
			t.Run("FencedFinish/"+path, func(t *testing.T) {
				fresh(t)
				s := openTestStore(t, dsn)
				ctx := context.Background()
				if path == "lone" && s.Dialect() == DialectMySQL && !s.OnetripInUse() {
					t.Fatal("no onetrip pool on a MySQL handle from OpenDB")
				}
				mustInsert(t, s, sampleTask("f", StatePending, 1, 4))
				got, _ := s.ClaimDue(ctx, "owner", 10, 1000, 1, []string{"f"}, nil)
				c := got[0]
				good := fence{ID: c.ID, Shard: 4, Owner: "owner", Attempt: 1, From: StateRunning}
				msg := "boom"
				for name, f := range map[string]fence{
					"other owner":   {ID: c.ID, Shard: 4, Owner: "thief", Attempt: 1, From: StateRunning},
					"stale attempt": {ID: c.ID, Shard: 4, Owner: "owner", Attempt: 0, From: StateRunning},
					"wrong shard":   {ID: c.ID, Shard: 5, Owner: "owner", Attempt: 1, From: StateRunning},
				} {
					lost := &Attempt{TaskPK: c.ID, Attempt: 1, Kind: "attempt", Worker: f.Owner, StartedAt: 10, FinishedAt: 20, Outcome: OutcomeFailed, Error: msg}
					if err := finish(s, ctx, finishing{Fence: f, To: StateRetrying, Due: 50, ErrMsg: &msg, History: lost}, 20); !errors.Is(err, ErrLeaseLost) {
						t.Fatalf("%s: finish = %v, want ErrLeaseLost", name, err)
					}
				}
				if atts, _ := s.Attempts(ctx, c.ID); len(atts) != 0 {
					t.Fatalf("fenced-out finishes wrote history %+v", atts)
				}
				hist := &Attempt{TaskPK: c.ID, Attempt: 1, Kind: "attempt", Worker: "owner", StartedAt: 10, FinishedAt: 20, Outcome: OutcomeSucceeded}
				if err := finish(s, ctx, finishing{Fence: good, To: StateSucceeded, Due: 1, History: hist}, 20); err != nil {
					t.Fatal(err)
				}
				if err := finish(s, ctx, finishing{Fence: good, To: StateSucceeded, Due: 1, History: hist}, 21); !errors.Is(err, ErrLeaseLost) {
					t.Fatalf("second finish = %v, want ErrLeaseLost", err)
				}
				// RP-005: a terminal state refuses any further transition.
				err := finish(s, ctx, finishing{Fence: fence{ID: c.ID, Shard: 4, Owner: "owner", Attempt: 1, From: StateSucceeded}, To: StateSucceeded}, 22)
				var te *TransitionError
				if !errors.As(err, &te) || te.Code != CodeTransitionInvalid {
					t.Fatalf("succeeded → succeeded = %v, want %s", err, CodeTransitionInvalid)
				}
				atts, _ := s.Attempts(ctx, c.ID)
				if len(atts) != 1 || atts[0].Outcome != OutcomeSucceeded {
					t.Fatalf("history %+v, want exactly the one recorded attempt", atts)
				}
				if tk, _ := s.Get(ctx, c.ID); tk.State != StateSucceeded || tk.LeaseOwner != "" {
					t.Fatalf("task after finish: %s owner %q", tk.State, tk.LeaseOwner)
				}
			})

			// A finish whose history row cannot be written changes nothing,
			// and leaves no transaction open on a pooled connection.
			t.Run("FailedFinishWritesNothing/"+path, func(t *testing.T) {
				fresh(t)
				s := openTestStore(t, dsn)
				ctx := context.Background()
				mustInsert(t, s, sampleTask("f", StatePending, 1, 4))
				got, _ := s.ClaimDue(ctx, "owner", 10, 1000, 1, []string{"f"}, nil)
				c := got[0]
				good := fence{ID: c.ID, Shard: 4, Owner: "owner", Attempt: 1, From: StateRunning}
				bad := &Attempt{TaskPK: c.ID, Attempt: 1, Kind: strings.Repeat("k", 40), Worker: "owner", StartedAt: 10, FinishedAt: 20, Outcome: OutcomeSucceeded}
				if s.Dialect() == DialectSQLite {
					// SQLite ignores VARCHAR lengths (MySQL's strict mode
					// refuses the value); make it refuse too.
					if _, err := dbx(s).ExecContext(ctx, "CREATE TRIGGER kind_length BEFORE INSERT ON argo_task_attempt WHEN length(NEW.kind) > 16 BEGIN SELECT RAISE(ABORT, 'kind too long'); END"); err != nil {
						t.Fatal(err)
					}
				}
				if err := finish(s, ctx, finishing{Fence: good, To: StateSucceeded, Due: 1, History: bad}, 20); err == nil {
					t.Fatal("finish with an unwritable history row succeeded")
				}
				for i := range 20 { // every pooled connection sees the row unchanged
					if tk, err := s.Get(ctx, c.ID); err != nil || tk.State != StateRunning || tk.LeaseOwner != "owner" {
						t.Fatalf("read %d after the failed finish: %+v, %v", i, tk, err)
					}
				}
				hist := &Attempt{TaskPK: c.ID, Attempt: 1, Kind: "attempt", Worker: "owner", StartedAt: 10, FinishedAt: 20, Outcome: OutcomeSucceeded}
				if err := finish(s, ctx, finishing{Fence: good, To: StateSucceeded, Due: 1, History: hist}, 21); err != nil {
					t.Fatalf("finish after a failed one: %v", err)
				}
				if atts, _ := s.Attempts(ctx, c.ID); len(atts) != 1 {
					t.Fatalf("history %+v, want one row", atts)
				}
			})
		}

		// bothWritePaths runs fn on a fresh store twice: as configured (one
		// round trip on MySQL) and with the transaction path.
		bothWritePaths := func(name string, fn func(t *testing.T, s *storage.Store)) {
			for _, viaTx := range []bool{false, true} {
				sub := name
				if viaTx {
					sub += "/via transaction"
				}
				t.Run(sub, func(t *testing.T) {
					fresh(t)
					s := openTestStore(t, dsn)
					if viaTx {
						s.DisableOnetrip()
					}
					fn(t, s)
				})
			}
		}

		// A batch where each finish has its own fate: only the finishes whose
		// fence held change their rows and write history.
		bothWritePaths("FinishBatchMixed", func(t *testing.T, s *storage.Store) {
			ctx := context.Background()
			for range 4 {
				mustInsert(t, s, sampleTask("m", StatePending, 1, 0))
			}
			got, err := s.ClaimDue(ctx, "me", 10, 1000, 4, []string{"m"}, nil)
			if err != nil || len(got) != 4 {
				t.Fatalf("claim: %d, %v", len(got), err)
			}
			msg := "boom"
			fin := func(c *Task, owner string, from, to State, outcome string) finishing {
				return finishing{Fence: fence{ID: c.ID, Shard: 0, Owner: owner, Attempt: 1, From: from}, To: to, Due: 50, ErrMsg: &msg,
					History: &Attempt{TaskPK: c.ID, Attempt: 1, Kind: "attempt", Worker: owner, StartedAt: 10, FinishedAt: 20, Outcome: outcome, Error: msg}}
			}
			errs, err := s.FinishBatch(ctx, []finishing{
				fin(got[0], "me", StateRunning, StateRetrying, OutcomeFailed),
				fin(got[1], "thief", StateRunning, StateRetrying, OutcomeFailed),
				fin(got[2], "me", StateRunning, StateRecovered, OutcomeFailed),
				fin(got[3], "me", StateRunning, StateSucceeded, OutcomeSucceeded),
			}, 30)
			if err != nil {
				t.Fatal(err)
			}
			var te *TransitionError
			if errs[0] != nil || !errors.Is(errs[1], ErrLeaseLost) || !errors.As(errs[2], &te) || errs[3] != nil {
				t.Fatalf("errs %v, want [nil, lease lost, transition invalid, nil]", errs)
			}
			for i, want := range []State{StateRetrying, StateRunning, StateRunning, StateSucceeded} {
				if tk, _ := s.Get(ctx, got[i].ID); tk.State != want {
					t.Fatalf("task %d: %s, want %s", i, tk.State, want)
				}
			}
			var rows int
			if err := dbx(s).GetContext(ctx, &rows, "SELECT COUNT(*) FROM argo_task_attempt"); err != nil || rows != 1 {
				t.Fatalf("%d history rows (%v), want 1: the failure whose fence held", rows, err)
			}
			if atts, _ := s.Attempts(ctx, got[3].ID); len(atts) != 1 || atts[0].Outcome != OutcomeSucceeded {
				t.Fatalf("success history %+v", atts)
			}
		})

		// Held retries: claims leave a live hold alone; the batched start is
		// exact per task (one round trip on MySQL, a transaction elsewhere).
		bothWritePaths("HeldRetries", func(t *testing.T, s *storage.Store) {
			ctx := context.Background()
			msg := "boom"
			hold := func(shard int) heldStart {
				mustInsert(t, s, sampleTask("h", StatePending, 1, shard))
				got, err := s.ClaimDue(ctx, "me", 10, 1000, 1, []string{"h"}, []int{shard})
				if err != nil || len(got) != 1 {
					t.Fatalf("claim: %v, %v", got, err)
				}
				c := got[0]
				f := finishing{Fence: fence{ID: c.ID, Shard: shard, Owner: "me", Attempt: 1, From: StateRunning}, To: StateRetrying, Due: 100, ErrMsg: &msg, HoldUntil: 5000,
					History: &Attempt{TaskPK: c.ID, Attempt: 1, Kind: "attempt", Worker: "me", StartedAt: 10, FinishedAt: 20, Outcome: OutcomeFailed, Error: msg}}
				if err := s.Finish(ctx, f, 20); err != nil {
					t.Fatal(err)
				}
				return heldStart{ID: c.ID, Shard: shard, Attempt: 1, HoldUntil: 5000}
			}
			a, b, c, d := hold(1), hold(2), hold(3), hold(4)
			if tk, _ := s.Get(ctx, a.ID); tk.State != StateRetrying || tk.LeaseOwner != "me" || tk.LeaseUntil != 5000 {
				t.Fatalf("held row: %s owner %q lease_until %d", tk.State, tk.LeaseOwner, tk.LeaseUntil)
			}
			if got, _ := s.ClaimDue(ctx, "other", 4999, 9000, 10, []string{"h"}, nil); len(got) != 0 {
				t.Fatalf("claimed %d held retries before their hold ran out", len(got))
			}
			if err := s.Discard(ctx, b.ID, "operator", 30); err != nil { // B: discarded while held
				t.Fatal(err)
			}
			got, err := s.ClaimDue(ctx, "other", 5000, 9000, 10, []string{"h"}, []int{3}) // C: hold ran out, claimed elsewhere
			if err != nil || len(got) != 1 || got[0].ID != c.ID {
				t.Fatalf("claim after the hold: %v, %v", got, err)
			}
			started, err := s.StartHeld(ctx, "me", []heldStart{a, b, c, {ID: d.ID, Shard: 4, Attempt: 1, HoldUntil: 4999}}, 7000, 120)
			if err != nil {
				t.Fatal(err)
			}
			if want := []bool{true, false, false, false}; !slices.Equal(started, want) {
				t.Fatalf("started %v, want %v (A held, B discarded, C claimed elsewhere, D another hold)", started, want)
			}
			tk, _ := s.Get(ctx, a.ID)
			if tk.State != StateRunning || tk.ExecuteTimes != 2 || tk.LeaseOwner != "me" || tk.LeaseUntil != 7000 {
				t.Fatalf("started row: %s attempt %d owner %q lease_until %d", tk.State, tk.ExecuteTimes, tk.LeaseOwner, tk.LeaseUntil)
			}
			if tk, _ := s.Get(ctx, c.ID); tk.LeaseOwner != "other" || tk.ExecuteTimes != 2 {
				t.Fatalf("row claimed elsewhere changed: owner %q attempt %d", tk.LeaseOwner, tk.ExecuteTimes)
			}
			// Giving D back makes it claimable at once.
			if err := s.ReleaseHolds(ctx, "me", []int64{d.ID, a.ID}); err != nil {
				t.Fatal(err)
			}
			if tk, _ := s.Get(ctx, a.ID); tk.State != StateRunning || tk.LeaseOwner != "me" {
				t.Fatalf("releaseHolds touched a running task: %s owner %q", tk.State, tk.LeaseOwner)
			}
			if got, _ := s.ClaimDue(ctx, "other", 200, 9000, 10, []string{"h"}, []int{4}); len(got) != 1 || got[0].ID != d.ID {
				t.Fatalf("given-back hold not claimable: %v", got)
			}
		})

		t.Run("HistoryOfRequeuedTask", func(t *testing.T) {
			fresh(t)
			s := openTestStore(t, dsn)
			ctx := context.Background()
			// Attempt 1 failed, the task went dead and was requeued (the count
			// restarts), and attempt 1 of the second round succeeded.
			task := sampleTask("r", StatePending, 1, 0)
			mustInsert(t, s, task)
			if err := s.InsertAttempt(ctx, dbx(s), &Attempt{TaskPK: task.ID, Attempt: 1, Kind: "attempt", Worker: "w1", StartedAt: 5, FinishedAt: 6, Outcome: OutcomeFailed, Error: "down"}); err != nil {
				t.Fatal(err)
			}
			if _, err := dbx(s).ExecContext(ctx, "UPDATE argo_task SET task_status = 3, execute_times = 1, attempt_started_at = 50, attempt_worker = 'w2', gmt_modified = 60 WHERE id = ?", task.ID); err != nil {
				t.Fatal(err)
			}
			atts, err := s.Attempts(ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(atts) != 2 || atts[0].Outcome != OutcomeFailed || atts[1].Outcome != OutcomeSucceeded || atts[1].Worker != "w2" || atts[1].StartedAt != 50 || atts[1].FinishedAt != 60 {
				t.Fatalf("history %+v, want the failure then the success from the task row", atts)
			}
		})

		t.Run("RescueLosesToRenewal", func(t *testing.T) {
			fresh(t)
			s := openTestStore(t, dsn)
			ctx := context.Background()
			mustInsert(t, s, sampleTask("r", StatePending, 1, 0), sampleTask("r", StatePending, 2, 0))
			got, _ := s.ClaimDue(ctx, "w", 10, 100, 2, []string{"r"}, nil)
			expired, _ := s.ExpiredLeases(ctx, 200, 10)
			if len(expired) != 2 {
				t.Fatalf("expired leases %d, want 2", len(expired))
			}
			// The worker of the first task renews just before the rescuer writes.
			if lost, err := s.ExtendLeases(ctx, "w", []leaseKey{{ID: got[0].ID, Attempt: got[0].ExecuteTimes}}, 300, 150); err != nil || len(lost) != 0 {
				t.Fatalf("extend: lost %v, %v", lost, err)
			}
			msg := "lease expired"
			for i, e := range expired {
				f := finishing{Fence: fence{ID: e.ID, Shard: e.ShardKey, Owner: e.LeaseOwner, Attempt: e.ExecuteTimes, From: e.State}, To: StateRetrying, Due: 250, ErrMsg: &msg,
					History: &Attempt{TaskPK: e.ID, Attempt: e.ExecuteTimes, Kind: "attempt", Outcome: OutcomeLeaseExpired, StartedAt: 10, FinishedAt: 200}}
				err := s.Rescue(ctx, f, e.LeaseUntil, 200)
				renewed := e.ID == got[0].ID
				if renewed && !errors.Is(err, ErrLeaseLost) {
					t.Fatalf("rescue of a renewed lease = %v, want ErrLeaseLost", err)
				}
				if !renewed && err != nil {
					t.Fatalf("rescue %d: %v", i, err)
				}
			}
			// The vanished worker of the second task comes back: its late write is refused.
			late := fence{ID: got[1].ID, Shard: 0, Owner: "w", Attempt: 1, From: StateRunning}
			if err := s.Finish(ctx, finishing{Fence: late, To: StateSucceeded, Due: 1}, 400); !errors.Is(err, ErrLeaseLost) {
				t.Fatalf("late write after rescue = %v, want ErrLeaseLost", err)
			}
			row, _ := s.Get(ctx, got[1].ID)
			if row.State != StateRetrying || row.ExecuteTimes != 1 || row.LeaseOwner != "" {
				t.Fatalf("rescued row %+v", row)
			}
		})

		t.Run("RequeueDiscard", func(t *testing.T) {
			fresh(t)
			s := openTestStore(t, dsn)
			ctx := context.Background()
			dead := sampleTask("d", StateDead, 1, 0)
			dead.ExecuteTimes = 3
			ok := sampleTask("d", StateSucceeded, 1, 0)
			pending := sampleTask("d", StatePending, 1, 0)
			mustInsert(t, s, dead, ok, pending)
			if err := s.Requeue(ctx, dead.ID, 50); err != nil {
				t.Fatal(err)
			}
			row, _ := s.Get(ctx, dead.ID)
			if row.State != StatePending || row.ExecuteTimes != 0 || row.ExecuteTime != 50 {
				t.Fatalf("requeued row %+v", row)
			}
			var te *TransitionError
			if err := s.Requeue(ctx, ok.ID, 50); !errors.As(err, &te) || !errors.Is(err, ErrTransitionInvalid) {
				t.Fatalf("requeue succeeded task = %v, want %s", err, CodeTransitionInvalid)
			}
			if err := s.Discard(ctx, pending.ID, "  ", 60); err == nil {
				t.Fatal("discard without reason accepted")
			}
			if err := s.Discard(ctx, pending.ID, "duplicate order", 60); err != nil {
				t.Fatal(err)
			}
			row, _ = s.Get(ctx, pending.ID)
			if row.State != StateDiscarded || row.DiscardReason != "duplicate order" {
				t.Fatalf("discarded row %+v", row)
			}
			if err := s.Discard(ctx, ok.ID, "x", 60); !errors.Is(err, ErrTransitionInvalid) {
				t.Fatalf("discard succeeded task = %v", err)
			}
			if err := s.Requeue(ctx, 999999, 60); !errors.Is(err, ErrNotFound) {
				t.Fatalf("requeue unknown id = %v", err)
			}
		})

		t.Run("PurgeIsBounded", func(t *testing.T) {
			fresh(t)
			s := openTestStore(t, dsn)
			ctx := context.Background()
			for range 25 {
				mustInsert(t, s, sampleTask("p", StateSucceeded, 100, 0))
			}
			keepDead := sampleTask("p", StateDead, 100, 0)
			young := sampleTask("p", StateSucceeded, 5000, 0)
			mustInsert(t, s, keepDead, young)
			if err := s.InsertAttempt(ctx, dbx(s), &Attempt{TaskPK: young.ID, Attempt: 1, Kind: "attempt", Outcome: "succeeded"}); err != nil {
				t.Fatal(err)
			}
			n, err := s.Purge(ctx, 1000, 10)
			if err != nil || n != 10 {
				t.Fatalf("purge = %d, %v; want 10 (the batch)", n, err)
			}
			total := 10
			for n > 0 {
				n, _ = s.Purge(ctx, 1000, 10)
				total += n
			}
			if total != 25 {
				t.Fatalf("purged %d, want 25", total)
			}
			for _, id := range []int64{keepDead.ID, young.ID} {
				if _, err := s.Get(ctx, id); err != nil {
					t.Fatalf("task %d purged: %v", id, err)
				}
			}
			if atts, _ := s.Attempts(ctx, young.ID); len(atts) != 1 {
				t.Fatal("attempts of a kept task purged")
			}
		})

		// A discarded task requeued between the purge's SELECT and its DELETE
		// keeps its row and its history.
		t.Run("PurgeSparesRequeued", func(t *testing.T) {
			fresh(t)
			s := openTestStore(t, dsn)
			ctx := context.Background()
			gone, back := sampleTask("p", StateDiscarded, 100, 0), sampleTask("p", StateDiscarded, 100, 0)
			mustInsert(t, s, gone, back)
			for _, task := range []*Task{gone, back} {
				if err := s.InsertAttempt(ctx, dbx(s), &Attempt{TaskPK: task.ID, Attempt: 1, Kind: "attempt", Outcome: OutcomeFailed}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Requeue(ctx, back.ID, 2000); err != nil {
				t.Fatal(err)
			}
			n, err := s.PurgeIDs(ctx, []int64{gone.ID, back.ID}, 1000) // both were selected before the requeue
			if err != nil || n != 1 {
				t.Fatalf("purgeIDs = %d, %v; want 1", n, err)
			}
			if _, err := s.Get(ctx, gone.ID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("purged task still there: %v", err)
			}
			if atts, _ := s.Attempts(ctx, back.ID); len(atts) != 2 { // the attempt and the requeue's record
				t.Fatalf("requeued task's history: %d rows, want 2", len(atts))
			}
			if atts, _ := s.Attempts(ctx, gone.ID); len(atts) != 0 {
				t.Fatalf("purged task's history: %d rows, want 0", len(atts))
			}
		})
	})
}

func ids(ts []*Task) []int64 {
	var out []int64
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

func TestRetentionPurgeRuns(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig(dsn)
		cfg.RetentionAge, cfg.MaintenanceInterval, cfg.RescueInterval, cfg.PurgeBatch = 200*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond, 3
		rt := startRuntime(t, cfg)
		def := &TaskDef{Name: "short-lived", Policy: fastPolicy(1), Run: func(ctx context.Context, args []byte) error { return nil }}
		rt.Register(def)
		var idList []int64
		for range 7 {
			id, _ := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
			idList = append(idList, id)
		}
		waitFor(t, 10*time.Second, "all 7 finished rows purged", func() bool {
			for _, id := range idList {
				if _, err := rt.Inspector().Get(context.Background(), id); !errors.Is(err, ErrNotFound) {
					return false
				}
			}
			return true
		})
	})
}
