package runtime

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
)

// freshStore opens a store on a new database of the backend dsn names.
func freshStore(t *testing.T, backendDSN string) *storage.Store {
	t.Helper()
	if strings.HasPrefix(backendDSN, "mysql:") {
		return openTestStore(t, testdb.MySQLDSN(t))
	}
	return openTestStore(t, testdb.SQLiteDSN(t))
}

// eachWritePath runs fn on a fresh store as configured (one round trip on
// MySQL) and, on MySQL, also with the transaction path.
func eachWritePath(t *testing.T, fn func(t *testing.T, s *storage.Store)) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		paths := []bool{false}
		if strings.HasPrefix(dsn, "mysql:") {
			paths = append(paths, true)
		}
		for _, viaTx := range paths {
			name := "onetrip"
			if viaTx {
				name = "via transaction"
			}
			t.Run(name, func(t *testing.T) {
				s := freshStore(t, dsn)
				if viaTx {
					s.DisableOnetrip()
				}
				if !viaTx && s.Dialect() == DialectMySQL && !s.OnetripInUse() {
					t.Fatal("no onetrip pool on a MySQL handle from OpenDB")
				}
				fn(t, s)
			})
		}
	})
}

// claimByID takes only a row that is in the asked state, due and neither
// leased nor held: never a row running (or falling back) under another
// owner, even one whose lease ran out and is not yet rescued, never a
// finished row, never a held retry.
func TestClaimByIDTakesOnlyClaimableRows(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		s := freshStore(t, dsn)
		ctx := context.Background()
		const now = Millis(10_000)
		leased := func(state State, leaseUntil Millis) *Task {
			task := sampleTask("b", state, 1000, 0)
			task.ExecuteTimes, task.LeaseOwner, task.LeaseUntil = 1, "other", leaseUntil
			return task
		}
		cases := []struct {
			name string
			row  *Task
			from State
		}{
			{"running, lease expired, not yet rescued", leased(StateRunning, now-1), StatePending},
			{"running, live lease", leased(StateRunning, now+5000), StatePending},
			{"falling back, lease expired", leased(StateFallingBack, now-1), StateExhausted},
			{"succeeded", sampleTask("b", StateSucceeded, 1000, 0), StatePending},
			{"recovered", sampleTask("b", StateRecovered, 1000, 0), StateExhausted},
			{"held retry", leased(StateRetrying, now+5000), StateRetrying},
			{"pending, not yet due", sampleTask("b", StatePending, now+1, 0), StatePending},
			{"exhausted, asked as pending", sampleTask("b", StateExhausted, 1000, 0), StatePending},
		}
		for _, c := range cases {
			mustInsert(t, s, c.row)
			before, _ := s.Get(ctx, c.row.ID)
			got, err := s.ClaimByID(ctx, c.row.ID, c.from, "me", now, now+2000)
			if err != nil || got != nil {
				t.Fatalf("%s: claimByID = %+v, %v; want nil, nil", c.name, got, err)
			}
			if after, _ := s.Get(ctx, c.row.ID); *after != *before {
				t.Fatalf("%s: row changed by a refused claimByID:\n got %+v\nwant %+v", c.name, after, before)
			}
		}
		pending := sampleTask("b", StatePending, now, 0)
		exhausted := sampleTask("b", StateExhausted, now-5, 0)
		exhausted.ExecuteTimes = 3
		released := leased(StateRetrying, 0) // a hold given back at Stop
		released.LeaseOwner = ""
		mustInsert(t, s, pending, exhausted, released)
		for _, c := range []struct {
			row     *Task
			from    State
			want    State
			attempt int
		}{{pending, StatePending, StateRunning, 1}, {exhausted, StateExhausted, StateFallingBack, 3}, {released, StateRetrying, StateRunning, 2}} {
			got, err := s.ClaimByID(ctx, c.row.ID, c.from, "me", now, now+2000)
			if err != nil || got == nil {
				t.Fatalf("claimByID of a claimable %s row = %v, %v", c.from, got, err)
			}
			if got.State != c.want || got.LeaseOwner != "me" || got.LeaseUntil != now+2000 || got.ExecuteTimes != c.attempt {
				t.Fatalf("claimed %s row: %s owner %q lease_until %d attempt %d", c.from, got.State, got.LeaseOwner, got.LeaseUntil, got.ExecuteTimes)
			}
			if again, err := s.ClaimByID(ctx, c.row.ID, c.from, "thief", now, now+2000); err != nil || again != nil {
				t.Fatalf("second claimByID of the %s row = %v, %v; want nil", c.from, again, err)
			}
		}
		if _, err := s.ClaimByID(ctx, pending.ID, StateRunning, "me", now, now+2000); err == nil {
			t.Fatal("claimByID from running accepted")
		}
	})
}

// A held retry is started only by its owner: a row held by another instance
// with the same attempt and hold is not started, and is left as it was.
func TestHeldStartNeedsTheOwner(t *testing.T) {
	eachWritePath(t, func(t *testing.T, s *storage.Store) {
		ctx := context.Background()
		mine, theirs := sampleTask("h", StateRetrying, 100, 1), sampleTask("h", StateRetrying, 100, 1)
		for _, task := range []*Task{mine, theirs} {
			task.ExecuteTimes, task.LeaseUntil = 1, 5000
		}
		mine.LeaseOwner, theirs.LeaseOwner = "me", "other"
		mustInsert(t, s, mine, theirs)
		before, _ := s.Get(ctx, theirs.ID)
		started, err := s.StartHeld(ctx, "me", []heldStart{
			{ID: theirs.ID, Shard: 1, Attempt: 1, HoldUntil: 5000},
			{ID: mine.ID, Shard: 1, Attempt: 1, HoldUntil: 5000},
		}, 7000, 120)
		if err != nil {
			t.Fatal(err)
		}
		if started[0] || !started[1] {
			t.Fatalf("started %v, want [false true]: only the hold this owner has starts", started)
		}
		if after, _ := s.Get(ctx, theirs.ID); *after != *before {
			t.Fatalf("another owner's hold changed:\n got %+v\nwant %+v", after, before)
		}
		if tk, _ := s.Get(ctx, mine.ID); tk.State != StateRunning || tk.ExecuteTimes != 2 || tk.LeaseUntil != 7000 || tk.LeaseOwner != "me" {
			t.Fatalf("own hold: %s attempt %d lease_until %d owner %q", tk.State, tk.ExecuteTimes, tk.LeaseUntil, tk.LeaseOwner)
		}
	})
}

// Claimers racing on the same due rows never both win one: every row is
// won exactly once, and each claimer gets back exactly the rows the
// database says it holds.
func TestRacingClaimersWinEachRowOnce(t *testing.T) {
	eachWritePath(t, func(t *testing.T, s *storage.Store) {
		const rows, claimers = 300, 12
		for i := range rows {
			mustInsert(t, s, sampleTask("race", StatePending, Millis(i%7), i%4))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var mu sync.Mutex
		winner := map[int64]string{}
		var dup []string
		var claimed atomic.Int64
		errs := make(chan error, claimers)
		var wg sync.WaitGroup
		for w := range claimers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				owner := fmt.Sprintf("w%d", w)
				shards := []int{w % 4, (w + 1) % 4} // overlapping scopes, as claims and steals
				if w%3 == 0 {
					shards = nil
				}
				for claimed.Load() < rows && ctx.Err() == nil {
					got, err := s.ClaimDue(ctx, owner, 1_000, 60_000, 1+w%5, []string{"race"}, shards)
					if err != nil {
						errs <- fmt.Errorf("%s: %w", owner, err)
						return
					}
					mu.Lock()
					for _, c := range got {
						if prev, ok := winner[c.ID]; ok {
							dup = append(dup, fmt.Sprintf("row %d won by %s and %s", c.ID, prev, owner))
						}
						winner[c.ID] = owner
					}
					mu.Unlock()
					claimed.Add(int64(len(got)))
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if len(dup) > 0 {
			t.Fatalf("%d rows won twice, first: %s", len(dup), dup[0])
		}
		if ctx.Err() != nil {
			t.Fatalf("after 60 s, %d of %d rows claimed", len(winner), rows)
		}
		if len(winner) != rows {
			t.Fatalf("%d rows won, want %d", len(winner), rows)
		}
		var stored []struct {
			ID      int64  `db:"id"`
			Owner   string `db:"lease_owner"`
			Attempt int    `db:"execute_times"`
		}
		if err := dbx(s).Select(&stored, "SELECT id, lease_owner, execute_times FROM argo_task"); err != nil {
			t.Fatal(err)
		}
		for _, r := range stored {
			if r.Owner != winner[r.ID] || r.Attempt != 1 {
				t.Fatalf("row %d: held by %q at attempt %d, but %q was told it won it", r.ID, r.Owner, r.Attempt, winner[r.ID])
			}
		}
	})
}

// A claim takes a candidate only if the row is still as it was read: one
// that another claimer took and gave back meanwhile (retrying again, due,
// unleased, one attempt further) is not taken on the stale read.
func TestClaimSkipsRowChangedSinceRead(t *testing.T) {
	eachWritePath(t, func(t *testing.T, s *storage.Store) {
		ctx := context.Background()
		moved, kept := sampleTask("s", StateRetrying, 100, 0), sampleTask("s", StateRetrying, 100, 0)
		moved.ExecuteTimes, kept.ExecuteTimes = 1, 1
		mustInsert(t, s, moved, kept)
		staleMoved, _ := s.Get(ctx, moved.ID)
		staleKept, _ := s.Get(ctx, kept.ID)
		// Meanwhile another instance claims the row, its attempt fails, and
		// the retry is due again at once.
		if got, err := s.ClaimByID(ctx, moved.ID, StateRetrying, "other", 200, 5000); err != nil || got == nil {
			t.Fatalf("claim by the other instance: %v, %v", got, err)
		}
		msg := "failed"
		if err := s.Finish(ctx, finishing{Fence: fence{ID: moved.ID, Shard: 0, Owner: "other", Attempt: 2, From: StateRunning}, To: StateRetrying, Due: 150, ErrMsg: &msg,
			History: &Attempt{TaskPK: moved.ID, Attempt: 2, Kind: "attempt", Worker: "other", StartedAt: 200, FinishedAt: 210, Outcome: OutcomeFailed, Error: msg}}, 210); err != nil {
			t.Fatal(err)
		}
		took, err := s.TakeCandidates(ctx, "me", 300, 300, 5000, []*Task{staleMoved, staleKept})
		if err != nil {
			t.Fatal(err)
		}
		if len(took) != 1 || took[0].ID != kept.ID {
			t.Fatalf("took %v, want only %d (the row still as read)", ids(took), kept.ID)
		}
		if tk, _ := s.Get(ctx, moved.ID); tk.State != StateRetrying || tk.ExecuteTimes != 2 || tk.LeaseOwner != "" {
			t.Fatalf("row changed since read: %s attempt %d owner %q, want retrying at attempt 2, unleased", tk.State, tk.ExecuteTimes, tk.LeaseOwner)
		}
	})
}

// The runtime paths that claim by id (watchCommit after a SubmitTx, and
// fallbackNow after the last attempt fails) race the poller's claims of the
// same rows; each attempt and each fallback still runs exactly once.
func TestClaimByIDPathsRunOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig(dsn)
		cfg.PollInterval = 2 * time.Millisecond // the poller races every claim by id
		cfg.Workers = 8
		rt := startRuntime(t, cfg)
		const tasks = 100
		var runs, fallbacks calls
		var mu sync.Mutex
		inFlight := map[int64]bool{}
		var overlaps atomic.Int64
		def := &TaskDef{Name: "byid", Policy: fastPolicy(1),
			Run: func(ctx context.Context, _ []byte) error {
				id, _, _ := AttemptFrom(ctx)
				mu.Lock()
				if inFlight[id] {
					overlaps.Add(1)
				}
				inFlight[id] = true
				mu.Unlock()
				runs.inc(fmt.Sprint(id))
				mu.Lock()
				delete(inFlight, id)
				mu.Unlock()
				return fmt.Errorf("attempt of %d fails", id)
			},
			Fallback: func(ctx context.Context, _ []byte, _ error) error {
				id, _, _ := AttemptFrom(ctx)
				fallbacks.inc(fmt.Sprint(id))
				return nil
			}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		var ids []int64
		for i := range tasks {
			tx, err := rt.DB().BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			id, err := rt.SubmitTx(ctx, tx, Call{Task: def, Args: []byte(fmt.Sprintf(`{"n":%d}`, i))})
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		for _, id := range ids {
			waitState(t, rt, id, StateRecovered, 30*time.Second)
		}
		if err := rt.Stop(ctx); err != nil { // waits for every attempt and claim by id
			t.Fatal(err)
		}
		for _, id := range ids {
			if r, f := runs.get(fmt.Sprint(id)), fallbacks.get(fmt.Sprint(id)); r != 1 || f != 1 {
				t.Fatalf("task %d: %d attempts and %d fallbacks ran, want 1 and 1", id, r, f)
			}
		}
		if n := overlaps.Load(); n > 0 {
			t.Fatalf("%d attempts started while another attempt of the same task ran", n)
		}
	})
}
