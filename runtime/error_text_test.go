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
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	forEachBackend(t, func(t *testing.T, dsn string) {
		s := openTestStore(t, dsn)
		requireStrictMySQL(t, s)
		in := &Inspector{store: s, SingleOperatorDiscard: true}
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
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
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
