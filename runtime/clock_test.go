package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// skewTolerance bounds a measured skew's error in these tests: half the
// round trip to a database on this host, plus SQLite's millisecond clock,
// plus a loaded machine's scheduling delays.
const skewTolerance = 250 * time.Millisecond

// offsetClock is a Config.Now that runs offset from the real clock; the
// offset can be changed (stepped) while the runtime runs.
type offsetClock struct{ offset atomic.Int64 }

func newOffsetClock(d time.Duration) *offsetClock {
	c := &offsetClock{}
	c.offset.Store(int64(d))
	return c
}

func (c *offsetClock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// logRecords keeps the records of a logger, to check what was logged.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return quietLogger().Handler().Handle(context.Background(), r)
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

// matching returns the records at level whose message contains text.
func (l *logRecords) matching(level slog.Level, text string) []slog.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []slog.Record
	for _, r := range l.recs {
		if r.Level == level && strings.Contains(r.Message, text) {
			out = append(out, r)
		}
	}
	return out
}

func near(got, want, tol time.Duration) bool { return got-want <= tol && want-got <= tol }

func skewOf(rt *Runtime) time.Duration { return rt.clock.skew() }

// A runtime whose clock is 7 s behind measures a skew of +7 s at Start,
// before any claim, and writes database times (its heartbeat) rather than
// its own. It says so once at INFO.
func TestClockSkewMeasuredAtStart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		logs := &logRecords{}
		cfg := testConfig(dsn)
		cfg.Logger = slog.New(logs)
		cfg.Now = newOffsetClock(-7 * time.Second).now
		rt := startRuntime(t, cfg)
		if got := skewOf(rt); !near(got, 7*time.Second, skewTolerance) {
			t.Fatalf("skew after Start = %s, want 7s ± %s", got, skewTolerance)
		}
		if d := rt.now().Sub(time.Now()); !near(d, 0, skewTolerance) {
			t.Fatalf("rt.now() is %s off the database's clock (this host's), want ± %s", d, skewTolerance)
		}
		st, err := rt.Inspector().Stats(context.Background(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if d := st.At.Sub(time.Now()); !near(d, 0, skewTolerance) {
			t.Fatalf("the runtime's Inspector is %s off the database's clock, want ± %s", d, skewTolerance)
		}
		var beat Millis
		if err := dbx(rt.store).Get(&beat, "SELECT heartbeat_at FROM argo_instance WHERE instance_id = ?", rt.InstanceID()); err != nil {
			t.Fatal(err)
		}
		if d := beat.Time().Sub(time.Now()); d > 0 || d < -time.Second {
			t.Fatalf("heartbeat_at is %s from the database's clock, want within the last second (not 7 s back)", d)
		}
		// More heartbeats: still one INFO line.
		waitFor(t, 5*time.Second, "three more heartbeats", func() bool {
			var b Millis
			if err := dbx(rt.store).Get(&b, "SELECT heartbeat_at FROM argo_instance WHERE instance_id = ?", rt.InstanceID()); err != nil {
				t.Fatal(err)
			}
			return b >= beat+Millis(3*cfg.HeartbeatInterval.Milliseconds())
		})
		infos := logs.matching(slog.LevelInfo, "clock differs from the database's")
		if len(infos) != 1 {
			t.Fatalf("%d INFO lines about the skew, want 1", len(infos))
		}
		var skewAttr time.Duration
		infos[0].Attrs(func(a slog.Attr) bool {
			if a.Key == "skew" {
				skewAttr = a.Value.Duration()
			}
			return true
		})
		if !near(skewAttr, 7*time.Second, skewTolerance) {
			t.Fatalf("INFO line names skew %s, want about 7s", skewAttr)
		}
		if w := logs.matching(slog.LevelWarn, "clock"); len(w) != 0 {
			t.Fatalf("WARN about the clock without a step: %s", w[0].Message)
		}
	})
}

// A step of this host's clock is picked up at the next heartbeat, and
// logged at WARN.
func TestClockStepPickedUpAtNextHeartbeat(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		logs := &logRecords{}
		clock := newOffsetClock(0)
		cfg := testConfig(dsn)
		cfg.Logger = slog.New(logs)
		cfg.Now = clock.now
		rt := startRuntime(t, cfg)
		if got := skewOf(rt); !near(got, 0, skewTolerance) {
			t.Fatalf("skew after Start = %s, want 0 ± %s", got, skewTolerance)
		}
		clock.offset.Store(int64(-30 * time.Second))
		stepped := time.Now()
		waitFor(t, 5*time.Second, "the skew to follow the clock step", func() bool {
			return near(skewOf(rt), 30*time.Second, skewTolerance)
		})
		if took := time.Since(stepped); took > 2*cfg.HeartbeatInterval+time.Second {
			t.Fatalf("the step was picked up after %s, want within a heartbeat (%s)", took, cfg.HeartbeatInterval)
		}
		waitFor(t, 5*time.Second, "a WARN line about the step", func() bool {
			return len(logs.matching(slog.LevelWarn, "clock was stepped")) == 1
		})
	})
}

// A reading whose round trip took longer than maxClockRoundTrip is
// ignored: the last good skew stays.
func TestClockSlowReadingIgnored(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		var stride atomic.Int64 // added to the clock at every reading of it
		var extra atomic.Int64
		cfg := testConfig(dsn)
		cfg.HeartbeatInterval = time.Hour // only the readings this test makes
		cfg.Now = func() time.Time { return time.Now().Add(time.Duration(extra.Add(stride.Load()))) }
		rt := startRuntime(t, cfg)
		good := skewOf(rt)
		if !near(good, 0, skewTolerance) {
			t.Fatalf("skew after Start = %s, want 0 ± %s", good, skewTolerance)
		}
		// Every reading of the local clock now advances it by 2 s, so a
		// round trip looks 2 s long and its midpoint is off by a second.
		stride.Store(int64(2 * time.Second))
		if err := rt.measureClock(context.Background()); err != nil {
			t.Fatal(err)
		}
		stride.Store(0)
		if got := skewOf(rt); got != good {
			t.Fatalf("skew after a 2 s round trip = %s, want the last good one (%s) kept", got, good)
		}
	})
}

// Two instances whose clocks are 10 s apart, on one database, with a 2 s
// lease and attempts of 3 s that fail twice: the fast instance (which holds
// the maintenance role, so rescues expired leases) never takes the slow
// one's live lease, no task runs twice at once, and each attempt of each
// task runs exactly once. Without the database clock the fast instance sees
// every lease of the slow one as expired 8 s ago and rescues it at once.
func TestTwoInstancesTenSecondsApartNeverOverlap(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		const attemptTime = 3 * time.Second // longer than the lease: renewal matters
		var (
			mu       sync.Mutex
			runs     = map[string]int{}    // "task/attempt" → executions
			inFlight = map[int64]int{}     // task → attempts running now
			overlaps []string              // what ran at once
			ranOn    = map[string]string{} // "task/attempt" → instance
		)
		def := func(instance string) *TaskDef {
			return &TaskDef{Name: "clock.skewed", Policy: RetryPolicy{MaxAttempts: 3, Backoff: BackoffFixed, Initial: 100 * time.Millisecond, Jitter: Jitter{Kind: JitterNone}},
				Run: func(ctx context.Context, _ []byte) error {
					id, attempt, _ := AttemptFrom(ctx)
					key := fmt.Sprintf("%d/%d", id, attempt)
					mu.Lock()
					runs[key]++
					ranOn[key] = instance
					inFlight[id]++
					if inFlight[id] > 1 {
						overlaps = append(overlaps, fmt.Sprintf("task %d attempt %d started on %s while %d attempt(s) of it ran", id, attempt, instance, inFlight[id]-1))
					}
					mu.Unlock()
					// A function that does not watch its context, as many
					// do not: it runs its full time whatever happens.
					time.Sleep(attemptTime)
					mu.Lock()
					inFlight[id]--
					mu.Unlock()
					if attempt < 3 {
						return errors.New("fails on purpose")
					}
					return nil
				}}
		}
		newCfg := func(id string, offset time.Duration) Config {
			cfg := testConfig(dsn)
			cfg.InstanceID = id
			cfg.Now = newOffsetClock(offset).now
			cfg.StealAfter = 100 * time.Millisecond // idle instances take any overdue task
			cfg.ShutdownTimeout = 10 * time.Second
			return cfg
		}
		fast := startRuntime(t, newCfg("fast", 5*time.Second))
		if err := fast.Register(def("fast")); err != nil {
			t.Fatal(err)
		}
		// The fast instance takes the maintenance role (it runs the rescue)
		// before the slow one starts.
		waitFor(t, 5*time.Second, "the fast instance to hold the maintenance role", func() bool {
			var holder string
			err := dbx(fast.store).Get(&holder, "SELECT holder FROM argo_leader WHERE name = 'maintenance'")
			return err == nil && holder == "fast"
		})
		slow := startRuntime(t, newCfg("slow", -5*time.Second))
		slowDef := def("slow")
		if err := slow.Register(slowDef); err != nil {
			t.Fatal(err)
		}
		// Submitted on the slow instance, which starts each first attempt
		// itself at once; a few on the fast one too.
		var ids []int64
		for i := range 6 {
			rt := slow
			if i%3 == 2 {
				rt = fast
			}
			id, err := rt.Submit(context.Background(), Call{Task: slowDef, Args: []byte(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		in := slow.Inspector()
		waitFor(t, 60*time.Second, "every task to finish", func() bool {
			for _, id := range ids {
				task, err := in.Get(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				if !task.State.Terminal() {
					return false
				}
			}
			return true
		})
		mu.Lock()
		defer mu.Unlock()
		if len(runs) != 3*len(ids) {
			t.Errorf("%d (task, attempt) pairs ran, want %d (3 per task): %v", len(runs), 3*len(ids), runs)
		}
		if len(overlaps) > 0 {
			t.Errorf("%d overlapping executions, want none:\n%s", len(overlaps), strings.Join(overlaps, "\n"))
		}
		for _, id := range ids {
			task, err := in.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if task.State != StateSucceeded || task.ExecuteTimes != 3 {
				t.Errorf("task %d: %s after %d attempts, want succeeded after 3", id, task.State, task.ExecuteTimes)
			}
			for a := 1; a <= 3; a++ {
				key := fmt.Sprintf("%d/%d", id, a)
				if runs[key] != 1 {
					t.Errorf("task %d attempt %d ran %d times, want once", id, a, runs[key])
				}
			}
			hist, err := in.Attempts(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hist {
				if h.Outcome == OutcomeLeaseExpired {
					t.Errorf("task %d attempt %d (on %s): live lease rescued: %s", id, h.Attempt, h.Worker, h.Error)
				}
			}
		}
		t.Logf("attempts per instance: %v", countValues(ranOn))
	})
}

func countValues(m map[string]string) map[string]int {
	out := map[string]int{}
	for _, v := range m {
		out[v]++
	}
	return out
}
