package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
)

// recordingHandler keeps every log record (and passes it on to next).
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
	next    slog.Handler
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *recordingHandler) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r.Clone())
	h.mu.Unlock()
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

// count returns how many records of level have a message containing msg.
func (h *recordingHandler) count(level slog.Level, msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.records {
		if r.Level == level && strings.Contains(r.Message, msg) {
			n++
		}
	}
	return n
}

func (h *recordingHandler) errors() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		if r.Level >= slog.LevelError {
			s := r.Message
			r.Attrs(func(a slog.Attr) bool { s += " " + a.String(); return true })
			out = append(out, s)
		}
	}
	return out
}

// claimErrors counts failed claims (the other events are ignored).
type claimErrors struct{ n atomic.Int32 }

func (*claimErrors) Submitted(string)                                                 {}
func (*claimErrors) AttemptDone(string, string, string, time.Duration, time.Duration) {}
func (*claimErrors) Finished(string, State)                                           {}
func (*claimErrors) AlertFired(string)                                                {}
func (*claimErrors) LeaseRescued(string)                                              {}
func (c *claimErrors) ClaimError(error)                                               { c.n.Add(1) }

type outageArgs struct {
	N int `json:"n"`
}

// TestDatabaseOutage stops a private MariaDB for 10 seconds under a steady
// stream of tasks and starts it again: the runtime logs the outage once,
// refuses submits with ErrNotPersisted meanwhile, resumes by itself, lands
// the outcomes of attempts that finished during the outage, and completes
// every persisted task; nothing is marked succeeded that did not run.
func TestDatabaseOutage(t *testing.T) {
	srv := testdb.NewMySQLServer(t)
	dsn := srv.DSN(t)
	cfg := testConfigT(t, dsn)
	logs := &recordingHandler{next: cfg.Logger.Handler()}
	cfg.InstanceID = "outage-1"
	cfg.Workers = 8
	cfg.LeaseDuration = 3 * time.Second
	cfg.Logger = slog.New(logs)
	claims := &claimErrors{}
	cfg.Observer = claims
	rt := startRuntime(t, cfg)
	ctx := context.Background()

	stop := make(chan struct{})
	submitterDone := make(chan struct{})
	var (
		mu        sync.Mutex
		ran       = map[[2]int64]bool{} // (id, attempt) → succeeded
		running   = map[int64]bool{}
		dups      int
		lastOK    atomic.Int64 // unix ms of the last successful attempt
		lastClaim atomic.Int64 // same, of an attempt the poller claimed (a retry or a delayed task)
		accepted  sync.Map     // id → struct{}
		nAccepted atomic.Int32
		refused   atomic.Int32
		refusals  sync.Map // n → error of a refused submit
	)
	def := &TaskDef{Name: "outage.steady", Policy: RetryPolicy{MaxAttempts: 20, Backoff: BackoffFixed, Initial: 50 * time.Millisecond, Jitter: Jitter{Kind: JitterNone}},
		Run: func(ctx context.Context, raw []byte) error {
			id, attempt, _ := AttemptFrom(ctx)
			key := [2]int64{id, int64(attempt)}
			mu.Lock()
			if _, again := ran[key]; again || running[id] {
				dups++
				t.Errorf("task %d attempt %d ran twice or concurrently", id, attempt)
			}
			ran[key], running[id] = false, true
			mu.Unlock()
			time.Sleep(15 * time.Millisecond) // some attempts are in flight when the server stops
			var a outageArgs
			if err := json.Unmarshal(raw, &a); err != nil {
				return Undecodable(err)
			}
			mu.Lock()
			defer mu.Unlock()
			delete(running, id)
			if a.N%5 == 0 && attempt == 1 {
				return errors.New("transient")
			}
			ran[key] = true
			lastOK.Store(time.Now().UnixMilli())
			if attempt > 1 || a.N%3 == 0 {
				lastClaim.Store(time.Now().UnixMilli())
			}
			return nil
		}}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	stopOnce := sync.OnceFunc(func() { close(stop); receive(t, submitterDone, 30*time.Second, "the submitter to stop") })
	t.Cleanup(stopOnce) // before rt.Stop (cleanups run last first)

	// The steady stream: one submit every 10 ms; immediate ones and, every
	// third, one due a little later (it waits in the table).
	var wrongErr atomic.Value
	go func() {
		defer close(submitterDone)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			raw, _ := json.Marshal(outageArgs{N: n})
			c := Call{Task: def, Args: raw}
			if n%3 == 0 {
				c.RunAt = time.Now().Add(300 * time.Millisecond)
			}
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			id, err := rt.Submit(sctx, c)
			cancel()
			if err != nil {
				if !errors.Is(err, ErrNotPersisted) && !errors.Is(err, ErrOutcomeUnknown) {
					wrongErr.Store(err)
				}
				refused.Add(1)
				refusals.Store(n, err)
				continue
			}
			accepted.Store(id, struct{}{})
			nAccepted.Add(1)
		}
	}()

	time.Sleep(2 * time.Second)
	before := nAccepted.Load()
	if before == 0 {
		t.Fatal("no task accepted before the outage")
	}
	down := time.Now()
	srv.Stop(t)
	t.Logf("MariaDB stopped after %d tasks accepted (stop took %s)", before, time.Since(down).Round(time.Millisecond))
	time.Sleep(10*time.Second - time.Since(down))
	failedClaims := claims.n.Load()
	upStart := time.Now()
	srv.Start(t)
	up := time.Now()
	t.Logf("MariaDB down for %s (start took %s); %d submits refused meanwhile", up.Sub(down).Round(time.Millisecond), up.Sub(upStart).Round(time.Millisecond), refused.Load())

	// Resumes by itself: attempts succeed again soon after the server is back.
	waitFor(t, 15*time.Second, "an attempt to succeed after the outage", func() bool { return lastOK.Load() > up.UnixMilli() })
	resumed := time.UnixMilli(lastOK.Load()).Sub(up)
	waitFor(t, 15*time.Second, "the poller to claim and run a task after the outage", func() bool { return lastClaim.Load() > up.UnixMilli() })
	claimed := time.UnixMilli(lastClaim.Load()).Sub(up)
	time.Sleep(2 * time.Second)
	stopOnce()

	if err := wrongErr.Load(); err != nil {
		t.Fatalf("a refused submit wrapped neither ErrNotPersisted nor ErrOutcomeUnknown: %v", err)
	}
	if refused.Load() == 0 {
		t.Fatal("no submit was refused during the outage")
	}
	total := int(nAccepted.Load())
	ids := []int64{}
	accepted.Range(func(k, _ any) bool { ids = append(ids, k.(int64)); return true })

	// Every row that exists must succeed: the accepted ones, and those whose
	// submit was refused but whose INSERT landed (see below). Counted by
	// state, not against the accepted total (which would let a row never
	// acknowledged stand in for an accepted one still stuck). No lock is
	// held while waiting: the attempts need mu.
	waitRows(t, rt.store, 60*time.Second, "every row to succeed", "task_status <> 3")
	finished := time.Since(up)

	// Nothing lost: every accepted task succeeded. Nothing invented: each
	// succeeded at an attempt that ran and returned nil.
	in := rt.Inspector()
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		task, err := in.Get(ctx, id)
		if err != nil {
			t.Fatalf("accepted task %d: %v", id, err)
		}
		if task.State != StateSucceeded {
			t.Errorf("task %d is %s", id, task.State)
			continue
		}
		if !ran[[2]int64{id, int64(task.ExecuteTimes)}] {
			t.Errorf("task %d marked succeeded at attempt %d, which did not run to success", id, task.ExecuteTimes)
		}
	}
	if len(ids) != total {
		t.Errorf("%d ids recorded for %d accepted submits", len(ids), total)
	}
	// A row whose submit was refused must not exist: ErrNotPersisted
	// promises the call will not happen. The one exception is a submit
	// whose connection broke after the INSERT was sent (the server went
	// down mid-statement): its outcome is unknown to the runtime too. Such a
	// row must then run like any other (it is rescued when its lease
	// expires), which the wait above checked.
	var rows []struct {
		ID    int64  `db:"id"`
		State State  `db:"task_status"`
		Args  string `db:"task_parameter"`
	}
	if err := dbx(rt.store).SelectContext(ctx, &rows, "SELECT id, task_status, task_parameter FROM argo_task"); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if _, ok := accepted.Load(r.ID); ok {
			continue
		}
		var a outageArgs
		json.Unmarshal([]byte(r.Args), &a)
		v, _ := refusals.Load(a.N)
		err, _ := v.(error)
		if !errors.Is(err, ErrOutcomeUnknown) {
			t.Errorf("task %d (n=%d, %s) exists, but its submit returned %v (only ErrOutcomeUnknown may leave a row)", r.ID, a.N, r.State, err)
		} else {
			t.Logf("task %d (n=%d) exists and %s, though its submit, cut off by the shutdown, returned %v", r.ID, a.N, r.State, err)
		}
	}
	// An outcome written during the outage lands after it: no attempt that
	// ran is rescued as if its instance had died.
	var expired []struct {
		TaskPK  int64 `db:"task_pk"`
		Attempt int   `db:"attempt"`
	}
	if err := dbx(rt.store).SelectContext(ctx, &expired, "SELECT task_pk, attempt FROM argo_task_attempt WHERE outcome = ?", OutcomeLeaseExpired); err != nil {
		t.Fatal(err)
	}
	for _, e := range expired {
		_, acc := accepted.Load(e.TaskPK)
		t.Logf("lease expired: task %d attempt %d (submit acknowledged: %v)", e.TaskPK, e.Attempt, acc)
		if _, ran := ran[[2]int64{e.TaskPK, int64(e.Attempt)}]; ran {
			t.Errorf("task %d attempt %d ran, but its outcome was lost and the lease rescued", e.TaskPK, e.Attempt)
		}
	}
	if dups > 0 {
		t.Errorf("%d duplicate runs", dups)
	}

	// The poller backs off: a few failed claims over the outage, not one per
	// PollInterval (which would be 500).
	if failedClaims > 40 {
		t.Errorf("%d failed claims during a 10s outage with a %s poll interval: the poller does not back off", failedClaims, cfg.PollInterval)
	}

	// Logged once per state change, not per poll.
	if n := logs.count(slog.LevelError, "database unreachable"); n != 1 {
		t.Errorf("%d \"database unreachable\" errors logged for one outage, want 1", n)
	}
	if n := logs.count(slog.LevelInfo, "database reachable again"); n != 1 {
		t.Errorf("%d \"database reachable again\" logs, want 1", n)
	}
	errs := logs.errors()
	if len(errs) > 1 {
		t.Errorf("%d error records, want only the outage: %q", len(errs), errs)
	}
	t.Logf("%d tasks accepted, %d refused during the outage, %d attempts ran; first success %s after the server was back, first claimed by the poller %s after, all done %s after; %d lease-expired attempts (claims lost in the outage); %d failed claims during the outage",
		total, refused.Load(), len(ran), resumed.Round(time.Millisecond), claimed.Round(time.Millisecond), finished.Round(time.Millisecond), len(expired), failedClaims)
}

// waitRows waits until no row of argo_task matches where (an SQL condition),
// failing after timeout with a dump of the rows that still match: id, state,
// owner, lease_until, execute_times, execute_time and error text, with the
// database's clock, so that a stuck task says why.
func waitRows(t testing.TB, s *storage.Store, timeout time.Duration, what, where string) {
	t.Helper()
	ctx := context.Background()
	var lastErr error
	deadline := time.Now().Add(timeout)
	for {
		var n int
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		lastErr = dbx(s).GetContext(qctx, &n, "SELECT COUNT(*) FROM argo_task WHERE "+where)
		cancel()
		if lastErr == nil && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s (last error: %v); rows still matching %q at %s:\n%s",
		timeout, what, lastErr, where, time.Now().UTC().Format("15:04:05.000"), dumpRows(s, where))
}

// dumpRows formats the argo_task rows matching where (at most 50), one a
// line, for a failure message.
func dumpRows(s *storage.Store, where string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rows []struct {
		ID          int64  `db:"id"`
		State       State  `db:"task_status"`
		Owner       string `db:"lease_owner"`
		LeaseUntil  int64  `db:"lease_until"`
		Attempts    int    `db:"execute_times"`
		ExecuteTime int64  `db:"execute_time"`
		Error       string `db:"error_msg"`
	}
	err := dbx(s).SelectContext(ctx, &rows, "SELECT id, task_status, lease_owner, lease_until, execute_times, execute_time, error_msg FROM argo_task WHERE "+where+" ORDER BY id LIMIT 50")
	if err != nil {
		return "(could not read them: " + err.Error() + ")"
	}
	var b strings.Builder
	ms := func(v int64) string {
		if v == 0 {
			return "0"
		}
		return time.UnixMilli(v).UTC().Format("15:04:05.000")
	}
	for _, r := range rows {
		if len(r.Error) > 200 {
			r.Error = r.Error[:200] + "…"
		}
		fmt.Fprintf(&b, "  id=%d state=%s owner=%q lease_until=%s execute_times=%d execute_time=%s error=%q\n",
			r.ID, r.State, r.Owner, ms(r.LeaseUntil), r.Attempts, ms(r.ExecuteTime), r.Error)
	}
	return b.String()
}
