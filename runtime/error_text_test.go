package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
)

// poisonTexts are error texts MySQL in strict mode refuses as they are
// (1406 data too long, 1366 incorrect string value) or that SQLite's text
// functions mishandle (NUL), each with the escaped head it must be stored with.
var poisonTexts = []struct {
	name, text, storedHead string
}{
	{"100KiB", strings.Repeat("x", 100<<10), strings.Repeat("x", 1000)},
	{"invalid UTF-8 ff fe", "bad \xff\xfe bytes", `bad \xff\xfe bytes`},
	{"lone c3", "cut \xc3", `cut \xc3`},
	{"bf 27", "quote \xbf' DROP TABLE x; --", `quote \xbf' DROP TABLE x; --`},
	{"NUL", "nul \x00 inside", `nul \x00 inside`},
	{"100KiB invalid", "héad " + strings.Repeat("\xff", 100<<10), `héad \xff\xff`},
}

// checkStoredText fails unless got is what argo may store for orig: valid
// UTF-8 without NUL, within MaxErrorTextBytes, starting with head.
func checkStoredText(t *testing.T, what, got, head string) {
	t.Helper()
	if !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 || len(got) > MaxErrorTextBytes {
		t.Fatalf("%s: stored %d bytes, valid UTF-8 %v, NUL at %d; want valid UTF-8 without NUL within %d bytes", what, len(got), utf8.ValidString(got), strings.IndexByte(got, 0), MaxErrorTextBytes)
	}
	if !strings.HasPrefix(got, head) {
		t.Fatalf("%s: stored text starts %q, want %q", what, got[:min(len(got), 80)], head[:min(len(head), 80)])
	}
}

// requireStrictMySQL fails a MySQL test whose server would accept what strict
// mode refuses (the test would prove nothing).
func requireStrictMySQL(t *testing.T, s *storage.Store) {
	t.Helper()
	if s.Dialect() != DialectMySQL {
		return
	}
	var mode string
	if err := dbx(s).GetContext(context.Background(), &mode, "SELECT @@SESSION.sql_mode"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(mode, "STRICT_TRANS_TABLES") {
		t.Fatalf("sql_mode %q lacks STRICT_TRANS_TABLES: this test needs strict mode (the MariaDB default)", mode)
	}
}

// write that binds an error text, on both write paths, and reads it back.
// TestErrorTextsStoredByTheStore writes every poison text through each store
func TestErrorTextsStoredByTheStore(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backendDSN string) {
		for _, viaTx := range []bool{false, true} {
			t.Run(fmt.Sprintf("viaTx=%v", viaTx), func(t *testing.T) {
				dsn := testdb.SQLiteDSN(t)
				if strings.HasPrefix(backendDSN, "mysql:") {
					dsn = testdb.MySQLDSN(t)
				}
				s := openTestStore(t, dsn)
				if viaTx {
					s.DisableOnetrip()
				}
				requireStrictMySQL(t, s)
				ctx := context.Background()
				for _, p := range poisonTexts {
					// A new task carrying texts (the insert binds them too).
					in := sampleTask("poison", StatePending, 1, 0)
					in.ErrorMsg, in.FallbackErrorMsg, in.DiscardReason = p.text, p.text, p.text
					mustInsert(t, s, in)
					got, err := s.Get(ctx, in.ID)
					if err != nil {
						t.Fatal(err)
					}
					checkStoredText(t, p.name+" insert error_msg", got.ErrorMsg, p.storedHead)
					checkStoredText(t, p.name+" insert fallback_error_msg", got.FallbackErrorMsg, p.storedHead)
					checkStoredText(t, p.name+" insert discard_reason", got.DiscardReason, p.storedHead)

					// finish (a lone failure: task row + history), then a
					// batch of a fallback failure and a plain failure.
					a, b := sampleTask("poison", StatePending, 1, 0), sampleTask("poison", StatePending, 1, 0)
					mustInsert(t, s, a, b)
					claimed := claimIDs(t, s, a.ID, b.ID)
					text := p.text
					fail := func(c *Task, to State) finishing {
						return finishing{Fence: fence{ID: c.ID, Owner: "me", Attempt: c.ExecuteTimes, From: c.State}, To: to, Due: 50, ErrMsg: &text,
							History: &Attempt{TaskPK: c.ID, Attempt: c.ExecuteTimes, Kind: "attempt", Worker: "me", StartedAt: 10, FinishedAt: 20, Outcome: OutcomeFailed, Error: text}}
					}
					if err := s.Finish(ctx, fail(claimed[a.ID], StateRetrying), 30); err != nil {
						t.Fatalf("%s: finish: %v", p.name, err)
					}
					checkTaskTexts(t, s, p.name+" finish", a.ID, StateRetrying, p.storedHead)

					// b: exhausted, then its fallback fails with the text.
					if err := s.Finish(ctx, fail(claimed[b.ID], StateExhausted), 30); err != nil {
						t.Fatalf("%s: finish: %v", p.name, err)
					}
					fb, err := s.ClaimByID(ctx, b.ID, StateExhausted, "me", 60, 100000)
					if err != nil || fb == nil {
						t.Fatalf("claim fallback: %v %v", fb, err)
					}
					c := sampleTask("poison", StatePending, 1, 0)
					mustInsert(t, s, c)
					cc := claimIDs(t, s, c.ID)[c.ID]
					fbf := finishing{Fence: fence{ID: b.ID, Owner: "me", Attempt: fb.ExecuteTimes, From: StateFallingBack}, To: StateDead, Due: 70, FallbackErr: &text,
						History: &Attempt{TaskPK: b.ID, Attempt: fb.ExecuteTimes, Kind: "fallback", Worker: "me", StartedAt: 60, FinishedAt: 70, Outcome: OutcomeFailed, Error: text}}
					errs, err := s.FinishBatch(ctx, []finishing{fbf, fail(cc, StateRetrying)}, 80)
					if err != nil || errs[0] != nil || errs[1] != nil {
						t.Fatalf("%s: finishBatch: %v %v", p.name, errs, err)
					}
					dead, _ := s.Get(ctx, b.ID)
					if dead.State != StateDead {
						t.Fatalf("%s: fallback finish: %s", p.name, dead.State)
					}
					checkStoredText(t, p.name+" fallback_error_msg", dead.FallbackErrorMsg, p.storedHead)
					checkTaskTexts(t, s, p.name+" batch", c.ID, StateRetrying, p.storedHead)

					// A rescue of an expired lease with the text.
					d := sampleTask("poison", StatePending, 1, 0)
					mustInsert(t, s, d)
					dc := claimIDs(t, s, d.ID)[d.ID]
					rf := fail(dc, StateRetrying)
					rf.History.Outcome = OutcomeLeaseExpired
					if err := s.Rescue(ctx, rf, dc.LeaseUntil, 200); err != nil {
						t.Fatalf("%s: rescue: %v", p.name, err)
					}
					checkTaskTexts(t, s, p.name+" rescue", d.ID, StateRetrying, p.storedHead)
				}
			})
		}
	})
}

// claimIDs claims the given pending tasks (named "poison") for "me".
func claimIDs(t *testing.T, s *storage.Store, ids ...int64) map[int64]*Task {
	t.Helper()
	out := map[int64]*Task{}
	for _, id := range ids {
		c, err := s.ClaimByID(context.Background(), id, StatePending, "me", 5, 100000)
		if err != nil || c == nil {
			t.Fatalf("claim %d: %v %v", id, c, err)
		}
		out[id] = c
	}
	return out
}

// checkTaskTexts checks a task's state, its error_msg and the error of its
// last history row.
func checkTaskTexts(t *testing.T, s *storage.Store, what string, id int64, want State, head string) {
	t.Helper()
	ctx := context.Background()
	got, err := s.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != want {
		t.Fatalf("%s: state %s, want %s", what, got.State, want)
	}
	checkStoredText(t, what+" error_msg", got.ErrorMsg, head)
	atts, err := s.Attempts(ctx, id)
	if err != nil || len(atts) == 0 {
		t.Fatalf("%s: attempts %v %v", what, atts, err)
	}
	checkStoredText(t, what+" history error_msg", atts[len(atts)-1].Error, head)
}

// TestFlagOrphansLongMessage: the "no handler" message names every live
// instance; with many it passes any TEXT column's size.
func TestFlagOrphansLongMessage(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		s := openTestStore(t, dsn)
		requireStrictMySQL(t, s)
		mustInsert(t, s, sampleTask("gone", StatePending, 1, 0))
		live := make([]string, 3000)
		for i := range live {
			live[i] = fmt.Sprintf("instance-%04d-with-a-long-host-name.example", i)
		}
		flagged, err := s.FlagOrphans(context.Background(), []string{"other"}, live, 10, 20, 10)
		if err != nil || len(flagged) != 1 {
			t.Fatalf("flagOrphans: %v, %v", flagged, err)
		}
		var msg string
		if err := dbx(s).GetContext(context.Background(), &msg, "SELECT error_msg FROM argo_task WHERE task_id = 'gone'"); err != nil {
			t.Fatal(err)
		}
		checkStoredText(t, "orphan message", msg, storage.OrphanMsgPrefix+`"gone"`)
	})
}

// TestPoisonErrorTextsEndTasks runs tasks whose attempts, panics and
// fallbacks fail with poison texts: each reaches its next state, with a
// storable text, and nothing stays running.
func TestPoisonErrorTextsEndTasks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		rt := startRuntime(t, testConfig(dsn))
		requireStrictMySQL(t, rt.store)
		ctx := context.Background()
		type run struct {
			id     int64
			want   State
			head   string
			what   string
			panics bool
		}
		var runs []run
		for i, p := range poisonTexts {
			text := p.text
			recovers := &TaskDef{Name: fmt.Sprintf("recovers%d", i), Policy: fastPolicy(2),
				Run:      func(ctx context.Context, args []byte) error { return errors.New(text) },
				Fallback: func(ctx context.Context, args []byte, lastErr error) error { return nil }}
			fbFails := &TaskDef{Name: fmt.Sprintf("fallbackfails%d", i), Policy: fastPolicy(1),
				Run:      func(ctx context.Context, args []byte) error { return errors.New(text) },
				Fallback: func(ctx context.Context, args []byte, lastErr error) error { return errors.New(text) }}
			panics := &TaskDef{Name: fmt.Sprintf("panics%d", i), Policy: fastPolicy(1),
				Run: func(ctx context.Context, args []byte) error { panic(text) }}
			syncFails := &TaskDef{Name: fmt.Sprintf("sync%d", i), Policy: fastPolicy(1), Thread: Sync,
				Run: func(ctx context.Context, args []byte) error { return errors.New(text) }}
			if err := rt.Register(recovers, fbFails, panics, syncFails); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				def    *TaskDef
				want   State
				head   string
				panics bool
			}{{recovers, StateRecovered, p.storedHead, false}, {fbFails, StateDead, p.storedHead, false},
				{panics, StateDead, "panic: " + p.storedHead, true}, {syncFails, StateDead, p.storedHead, false}} {
				id, err := rt.Submit(ctx, Call{Task: c.def, Args: []byte(`{}`)})
				var ae *AttemptError
				if err != nil && !errors.As(err, &ae) {
					t.Fatalf("%s %s: submit: %v", p.name, c.def.Name, err)
				}
				runs = append(runs, run{id, c.want, c.head[:min(len(c.head), 1000)], p.name + " " + c.def.Name, c.panics})
			}
		}
		for _, r := range runs {
			task := waitState(t, rt, r.id, r.want, 20*time.Second)
			checkStoredText(t, r.what+" error_msg", task.ErrorMsg, r.head)
			if strings.HasPrefix(r.what[strings.LastIndex(r.what, " ")+1:], "fallbackfails") {
				checkStoredText(t, r.what+" fallback_error_msg", task.FallbackErrorMsg, r.head)
			}
			atts, err := rt.Inspector().Attempts(ctx, r.id)
			if err != nil || len(atts) == 0 {
				t.Fatalf("%s: attempts %v %v", r.what, atts, err)
			}
			checkStoredText(t, r.what+" history", atts[0].Error, r.head)
			if r.panics && !strings.Contains(atts[0].Error, "\ngoroutine ") {
				t.Fatalf("%s: panic stored without its stack: %q", r.what, atts[0].Error[max(0, len(atts[0].Error)-200):])
			}
		}
		var running int
		if err := dbx(rt.store).GetContext(ctx, &running, "SELECT COUNT(*) FROM argo_task WHERE task_status IN (1, 5)"); err != nil || running != 0 {
			t.Fatalf("%d rows still running or falling back (%v)", running, err)
		}
	})
}

// TestDiscardReasonRefusedUnlessStorable: an operator's reason that argo
// could only store altered is refused with what to do, and nothing changes.
func TestDiscardReasonRefusedUnlessStorable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		s := openTestStore(t, dsn)
		requireStrictMySQL(t, s)
		in := &Inspector{store: s}
		ctx := context.Background()
		task := sampleTask("d", StatePending, 1, 0)
		mustInsert(t, s, task)
		for _, reason := range []string{"bad \xff\xfe", "cut \xc3", "nul \x00", strings.Repeat("r", 100<<10)} {
			err := in.Discard(ctx, task.ID, reason)
			if err == nil || !strings.Contains(err.Error(), "discard reason") {
				t.Fatalf("reason %q: %v, want a refusal naming the discard reason", reason[:min(len(reason), 12)], err)
			}
			if _, err := in.DiscardWhere(ctx, Filter{}, reason, true); err == nil {
				t.Fatalf("DiscardWhere dry run accepted reason %q", reason[:min(len(reason), 12)])
			}
			if got, _ := s.Get(ctx, task.ID); got.State != StatePending || got.DiscardReason != "" {
				t.Fatalf("refused discard changed the task: %s %q", got.State, got.DiscardReason)
			}
		}
		reason := "duplicate of #12, é " + strings.Repeat("ok ", 1000)
		if err := in.Discard(ctx, task.ID, reason); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Get(ctx, task.ID); got.State != StateDiscarded || got.DiscardReason != reason {
			t.Fatalf("discard: %s, reason stored altered", got.State)
		}
	})
}

func (l *syncBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// shrinkErrorColumns makes the error texts of a MySQL schema 255-byte
// columns, so that a text the sanitiser passes (over 255 bytes) is refused
// for its data (1406): the degrade path's trigger. (SQLite has no column
// sizes: the degrade cannot be triggered there.)
func shrinkErrorColumns(t *testing.T, s *storage.Store, typ string) {
	t.Helper()
	for _, q := range []string{
		"ALTER TABLE argo_task MODIFY error_msg " + typ + " NOT NULL, MODIFY fallback_error_msg " + typ + " NOT NULL",
		"ALTER TABLE argo_task_attempt MODIFY error_msg " + typ + " NOT NULL",
	} {
		if _, err := dbx(s).Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDataErrorDegrades: a finish refused for its data is logged at ERROR
// and lands with the replacement text, on both write paths and in a batch
// (where the other finishes keep their texts); one refused even then fails
// with storage.ErrDataRefused at once.
func TestDataErrorDegrades(t *testing.T) {
	for _, viaTx := range []bool{false, true} {
		t.Run(fmt.Sprintf("viaTx=%v", viaTx), func(t *testing.T) {
			s := openTestStore(t, testdb.MySQLDSN(t))
			if viaTx {
				s.DisableOnetrip()
			}
			requireStrictMySQL(t, s)
			var logs syncBuffer
			s.SetLogger(logs.logger())
			shrinkErrorColumns(t, s, "TINYTEXT")
			ctx := context.Background()
			long, short := strings.Repeat("L", 1000), "short"
			a, b, c := sampleTask("poison", StatePending, 1, 0), sampleTask("poison", StatePending, 1, 0), sampleTask("poison", StatePending, 1, 0)
			mustInsert(t, s, a, b, c)
			cl := claimIDs(t, s, a.ID, b.ID, c.ID)
			fail := func(c *Task, text *string) finishing {
				return finishing{Fence: fence{ID: c.ID, Owner: "me", Attempt: c.ExecuteTimes, From: c.State}, To: StateRetrying, Due: 50, ErrMsg: text,
					History: &Attempt{TaskPK: c.ID, Attempt: c.ExecuteTimes, Kind: "attempt", Worker: "me", StartedAt: 10, FinishedAt: 20, Outcome: OutcomeFailed, Error: *text}}
			}
			if err := s.Finish(ctx, fail(cl[a.ID], &long), 30); err != nil {
				t.Fatalf("finish: %v", err)
			}
			errs, err := s.FinishBatch(ctx, []finishing{fail(cl[b.ID], &long), fail(cl[c.ID], &short)}, 30)
			if err != nil || errs[0] != nil || errs[1] != nil {
				t.Fatalf("finishBatch: %v %v", errs, err)
			}
			// A lease rescue likewise.
			r := sampleTask("poison", StatePending, 1, 0)
			mustInsert(t, s, r)
			rc := claimIDs(t, s, r.ID)[r.ID]
			rf := fail(rc, &long)
			rf.History.Outcome = OutcomeLeaseExpired
			if err := s.Rescue(ctx, rf, rc.LeaseUntil, 200); err != nil {
				t.Fatalf("rescue: %v", err)
			}
			for _, id := range []int64{a.ID, b.ID, r.ID} {
				checkTaskTexts(t, s, "degraded", id, StateRetrying, "argo: error text refused by the database (Error 1406")
			}
			if !strings.Contains(logs.String(), "level=ERROR msg=\"argo: the database refused a lease rescue for its data") {
				t.Fatalf("no ERROR log of the refused rescue:\n%s", logs.String())
			}
			checkTaskTexts(t, s, "batch neighbour", c.ID, StateRetrying, short)
			if n := strings.Count(logs.String(), "level=ERROR msg=\"argo: the database refused a finish for its data"); n != 2 {
				t.Fatalf("%d ERROR logs of a refused finish, want 2:\n%s", n, logs.String())
			}
			for _, id := range []int64{a.ID, b.ID} {
				if !strings.Contains(logs.String(), fmt.Sprintf("task_id=%d ", id)) {
					t.Fatalf("ERROR log does not name task %d:\n%s", id, logs.String())
				}
			}

			// Too small even for the replacement: refused at once, not retried.
			for _, q := range []string{"DELETE FROM argo_task_attempt", "DELETE FROM argo_task"} {
				if _, err := dbx(s).Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			shrinkErrorColumns(t, s, "VARCHAR(10)")
			d := sampleTask("poison", StatePending, 1, 0)
			mustInsert(t, s, d)
			start := time.Now()
			err = s.Finish(ctx, fail(claimIDs(t, s, d.ID)[d.ID], &long), 30)
			if !errors.Is(err, storage.ErrDataRefused) {
				t.Fatalf("finish into VARCHAR(10): %v, want storage.ErrDataRefused", err)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("refused finish took %s", time.Since(start))
			}
			if got, _ := s.Get(ctx, d.ID); got.State != StateRunning {
				t.Fatalf("refused finish wrote state %s", got.State)
			}
		})
	}
}

// TestDataErrorDegradesInRuntime: with an error column too small for the
// attempt's text, the task still reaches its next state, and the refusal is
// logged at ERROR.
func TestDataErrorDegradesInRuntime(t *testing.T) {
	dsn := testdb.MySQLDSN(t)
	s := openTestStore(t, dsn) // migrates
	requireStrictMySQL(t, s)
	shrinkErrorColumns(t, s, "TINYTEXT")
	var logs syncBuffer
	cfg := testConfig(dsn)
	cfg.Logger = logs.logger()
	rt := startRuntime(t, cfg)
	long := strings.Repeat("E", 1000)
	def := &TaskDef{Name: "longerror", Policy: fastPolicy(2),
		Run: func(ctx context.Context, args []byte) error { return errors.New(long) }}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	task := waitState(t, rt, id, StateDead, 20*time.Second)
	if !strings.HasPrefix(task.ErrorMsg, "argo: error text refused by the database (Error 1406") {
		t.Fatalf("error_msg %q", task.ErrorMsg)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), fmt.Sprintf("task_id=%d ", id)) {
		t.Fatalf("no ERROR log naming task %d:\n%s", id, logs.String())
	}
}

// TestDataRefusedNotRetriedForever: an outcome the database refuses even
// with its texts replaced (an error column of 10 bytes) is given up at once:
// logged at ERROR, not retried, and its lease no longer renewed, so that it
// expires (and the task is left to the rescue) instead of being held for as
// long as the process lives. Also when the refusal comes on a rewrite after
// an outage (the history table out of the way during the first write).
func TestDataRefusedNotRetriedForever(t *testing.T) {
	for _, afterOutage := range []bool{false, true} {
		t.Run(fmt.Sprintf("afterOutage=%v", afterOutage), func(t *testing.T) {
			dsn := testdb.MySQLDSN(t)
			s := openTestStore(t, dsn)
			requireStrictMySQL(t, s)
			shrinkErrorColumns(t, s, "VARCHAR(10)")
			var logs syncBuffer
			cfg := testConfig(dsn)
			cfg.Logger = logs.logger()
			attemptDone := make(chan struct{}, 1)
			cfg.Observer = attemptObserver{done: attemptDone}
			rt := startRuntime(t, cfg)
			def := &TaskDef{Name: "givenup", Policy: fastPolicy(2),
				Run: func(ctx context.Context, args []byte) error { return errors.New("an error longer than ten bytes") }}
			if err := rt.Register(def); err != nil {
				t.Fatal(err)
			}
			if afterOutage {
				if _, err := dbx(s).Exec("RENAME TABLE argo_task_attempt TO argo_task_attempt_away"); err != nil {
					t.Fatal(err)
				}
			}
			id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			if afterOutage {
				// AttemptDone comes once record returned: its first write
				// (on the renamed table) failed, and the rewrite is left to
				// record's background loop.
				select {
				case <-attemptDone:
				case <-time.After(10 * time.Second):
					t.Fatal("timed out after 10s waiting for the attempt to end")
				}
				if strings.Contains(logs.String(), "for its data") {
					t.Fatalf("the first write was refused for its data, not failed:\n%s", logs.String())
				}
				if _, err := dbx(s).Exec("RENAME TABLE argo_task_attempt_away TO argo_task_attempt"); err != nil {
					t.Fatal(err)
				}
			}
			const given = "outcome refused by the database even with its error texts replaced"
			waitFor(t, 10*time.Second, "the ERROR log of the refused outcome", func() bool { return strings.Contains(logs.String(), given) })
			waitFor(t, 10*time.Second, "the lease of the refused outcome to expire (no endless retry renewing it)", func() bool {
				var until Millis
				if err := dbx(s).Get(&until, "SELECT lease_until FROM argo_task WHERE id = ?", id); err != nil {
					t.Fatal(err)
				}
				return until < toMillis(time.Now())
			})
			if n := strings.Count(logs.String(), given); n != 1 {
				t.Fatalf("the refused outcome was written %d times, want once:\n%s", n, logs.String())
			}
		})
	}
}

// attemptObserver signals each ended attempt on done (without blocking).
type attemptObserver struct{ done chan struct{} }

func (o attemptObserver) AttemptDone(task, kind, outcome string, duration, lag time.Duration) {
	select {
	case o.done <- struct{}{}:
	default:
	}
}
func (attemptObserver) Submitted(string)       {}
func (attemptObserver) Finished(string, State) {}
func (attemptObserver) AlertFired(string)      {}
func (attemptObserver) LeaseRescued(string)    {}
func (attemptObserver) ClaimError(error)       {}
