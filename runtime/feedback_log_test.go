package runtime

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// logLines returns the lines of logs that contain every one of parts.
func logLines(logs *syncBuffer, parts ...string) []string {
	var out []string
	for _, line := range strings.Split(logs.String(), "\n") {
		match := line != ""
		for _, p := range parts {
			match = match && strings.Contains(line, p)
		}
		if match {
			out = append(out, line)
		}
	}
	return out
}

// Stop says what it waits for, with the deadline, and at the deadline what
// it cancels: ten attempts named, then a count.
func TestStopLogsWhatItWaitsForAndCancels(t *testing.T) {
	var logs syncBuffer
	cfg := testConfig(testdb.SQLiteDSN(t))
	cfg.Logger = logs.logger()
	cfg.ShutdownTimeout = 300 * time.Millisecond
	rt := startRuntime(t, cfg)
	started := make(chan int64, 12)
	def := &TaskDef{Name: "waits-for-cancel", Policy: fastPolicy(3), Run: func(ctx context.Context, args []byte) error {
		id, _, _ := AttemptFrom(ctx)
		started <- id
		<-ctx.Done()
		return ctx.Err()
	}}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for range 12 {
		if _, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	for range 12 {
		ids = append(ids, receive(t, started, 10*time.Second, "an attempt to start"))
	}
	slices.Sort(ids)
	if err := rt.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	first := fmt.Sprintf("task %d (waits-for-cancel) attempt 1", ids[0])
	tenth := fmt.Sprintf("task %d (waits-for-cancel) attempt 1", ids[9])
	eleventh := fmt.Sprintf("task %d (waits-for-cancel) attempt 1", ids[10])
	for _, want := range []struct{ what, head string }{
		{"what Stop waits for", "argo: Stop: waiting up to 300ms for 12 running attempts: "},
		{"what Stop cancels", "canceling 12 attempts"},
	} {
		lines := logLines(&logs, want.head)
		if len(lines) != 1 {
			t.Fatalf("%s: %d lines with %q, want 1; log:\n%s", want.what, len(lines), want.head, logs.String())
		}
		if l := lines[0]; !strings.Contains(l, first) || !strings.Contains(l, tenth) || strings.Contains(l, eleventh) || !strings.Contains(l, "and 2 more") {
			t.Fatalf("%s: %s\nwant the first ten attempts (%s … %s) and \"and 2 more\"", want.what, l, first, tenth)
		}
	}
	if !strings.Contains(logLines(&logs, "canceling 12 attempts")[0], "level=WARN") {
		t.Fatalf("cancellation at the deadline not a warning: %s", logLines(&logs, "canceling 12 attempts")[0])
	}
}

// Stop's context, when it ends sooner than ShutdownTimeout, is the wait it
// announces, and its end cancels the attempt.
func TestStopLogsTheWaitOfItsContext(t *testing.T) {
	var logs syncBuffer
	cfg := testConfig(testdb.SQLiteDSN(t)) // ShutdownTimeout 5s
	cfg.Logger = logs.logger()
	rt := startRuntime(t, cfg)
	started := make(chan int64, 1)
	def := &TaskDef{Name: "waits-for-cancel", Policy: fastPolicy(3), Run: func(ctx context.Context, args []byte) error {
		id, _, _ := AttemptFrom(ctx)
		started <- id
		<-ctx.Done()
		return ctx.Err()
	}}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	id := receive(t, started, 10*time.Second, "the attempt to start")
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	// Stop returns with ctx, maybe before the canceled attempt returns.
	_ = rt.Stop(ctx)
	waitFor(t, 5*time.Second, "the canceled attempt to return", func() bool { return len(rt.leases.running()) == 0 })
	attempt := fmt.Sprintf("task %d (waits-for-cancel) attempt 1", id)
	waiting := regexp.MustCompile(`argo: Stop: waiting up to (3\d\d|400)ms for 1 running attempt: ` + regexp.QuoteMeta(attempt) + `"`)
	if !waiting.MatchString(logs.String()) {
		t.Fatalf("no line matching %s; log:\n%s", waiting, logs.String())
	}
	if lines := logLines(&logs, "canceling 1 attempt ", attempt); len(lines) != 1 {
		t.Fatalf("%d lines saying Stop cancels %s, want 1; log:\n%s", len(lines), attempt, logs.String())
	}
}

// A Stop with nothing running says nothing about waiting or canceling.
func TestStopWithNothingRunningLogsNoWait(t *testing.T) {
	var logs syncBuffer
	cfg := testConfig(testdb.SQLiteDSN(t))
	cfg.Logger = logs.logger()
	rt := startRuntime(t, cfg)
	if err := rt.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if lines := logLines(&logs, "argo: Stop:"); len(lines) != 0 {
		t.Fatalf("Stop with nothing running logged %q", lines)
	}
}

// At Start, an instance logs the retries held by instances that are gone,
// by owner, and when the last hold runs out; its own previous run counts as
// gone. Holds of live instances, holds run out, running and finished tasks
// are not counted.
func TestStartLogsRetriesHeldByGoneInstances(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		s := openTestStore(t, dsn)
		now := time.Now()
		held := func(owner string, state State, until time.Time) *Task {
			task := sampleTask("held-elsewhere", state, toMillis(now), 0)
			task.ExecuteTimes, task.LeaseOwner, task.LeaseUntil = 1, owner, toMillis(until)
			return task
		}
		latest := now.Add(90 * time.Second)
		mustInsert(t, s,
			held("crashed-a", StateRetrying, now.Add(60*time.Second)),
			held("crashed-a", StateRetrying, latest),
			held("crashed-b", StateRetrying, now.Add(30*time.Second)),
			held("alive", StateRetrying, now.Add(120*time.Second)),      // a live instance's hold
			held("crashed-c", StateRetrying, now.Add(-time.Second)),     // hold already run out
			held("crashed-d", StateRunning, now.Add(200*time.Second)),   // a running attempt, not a hold
			held("crashed-e", StateSucceeded, now.Add(200*time.Second)), // finished
			held("restarted", StateRetrying, now.Add(10*time.Second)),   // this instance's previous run
			held("stale", StateRetrying, now.Add(20*time.Second)),       // an instance whose heartbeat stopped
		)
		// "alive" beats a minute ahead, so that it stays alive however long
		// the runtime takes to start on a loaded machine (seen: a start more
		// than InstanceTimeout after a beat at now counted it gone).
		for id, beat := range map[string]time.Time{"alive": now.Add(time.Minute), "stale": now.Add(-time.Hour)} {
			if err := s.RecordHeartbeat(context.Background(), id, []string{"held-elsewhere"}, toMillis(beat)); err != nil {
				t.Fatal(err)
			}
		}
		var logs syncBuffer
		cfg := testConfig(dsn)
		cfg.Logger = logs.logger()
		cfg.InstanceID = "restarted"
		startRuntime(t, cfg)
		lines := logLines(&logs, "retries held by instances that are gone")
		if len(lines) != 1 {
			t.Fatalf("%d lines about retries held by gone instances, want 1; log:\n%s", len(lines), logs.String())
		}
		until := toMillis(latest).Time().UTC().Format(time.RFC3339)
		for _, want := range []string{"level=INFO", "tasks=5 ", `held_by="crashed-a (2), crashed-b, restarted, stale"`, "until=" + until} {
			if !strings.Contains(lines[0], want) {
				t.Fatalf("line %s\nlacks %s", lines[0], want)
			}
		}
	})
}

// No line when no gone instance holds a retry.
func TestStartLogsNoHeldRetriesWhenNone(t *testing.T) {
	var logs syncBuffer
	cfg := testConfig(testdb.SQLiteDSN(t))
	cfg.Logger = logs.logger()
	startRuntime(t, cfg)
	if lines := logLines(&logs, "retries held by"); len(lines) != 0 {
		t.Fatalf("logged %q with no held retries", lines)
	}
}

// The "no handler" error names the task names (ten, then a count), with the
// number of tasks of each.
func TestNoHandlerErrorNamesTheTasks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		s := openTestStore(t, dsn)
		due := toMillis(time.Now().Add(-time.Minute))
		for i := range 12 {
			mustInsert(t, s, sampleTask(fmt.Sprintf("gone.%02d", i), StatePending, due, 0))
		}
		mustInsert(t, s, sampleTask("gone.00", StatePending, due, 0))
		var logs syncBuffer
		cfg := testConfig(dsn)
		cfg.Logger = logs.logger()
		startRuntime(t, cfg)
		const head = "no handler on any live instance"
		waitFor(t, 10*time.Second, "the no-handler error", func() bool { return len(logLines(&logs, head)) > 0 })
		line := logLines(&logs, head)[0]
		want := `tasks=13 names="gone.00 (2), gone.01, gone.02, gone.03, gone.04, gone.05, gone.06, gone.07, gone.08, gone.09, and 2 more names"`
		if !strings.Contains(line, want) {
			t.Fatalf("line %s\nlacks %s", line, want)
		}
	})
}

// The first shard-split line says plainly that this instance owns every
// shard; once another instance runs the same task, how many it owns.
func TestShardSplitLineSaysAllShards(t *testing.T) {
	dsn := testdb.SQLiteDSN(t)
	var logs syncBuffer
	cfg := testConfig(dsn)
	cfg.Logger = logs.logger()
	cfg.InstanceID = "first"
	rt1 := startRuntime(t, cfg)
	lines := logLines(&logs, "argo: shard split changed")
	if len(lines) != 1 {
		t.Fatalf("%d shard-split lines at Start, want 1; log:\n%s", len(lines), logs.String())
	}
	if !strings.Contains(lines[0], "owned_shards=all") || strings.Contains(lines[0], "owned_shards=0") || strings.Contains(lines[0], "all_shards") {
		t.Fatalf("first shard-split line %s\nwant owned_shards=all, and neither owned_shards=0 nor all_shards", lines[0])
	}
	def := &TaskDef{Name: "split", Policy: fastPolicy(3), Run: func(context.Context, []byte) error { return nil }}
	if err := rt1.Register(def); err != nil {
		t.Fatal(err)
	}
	cfg2 := testConfig(dsn)
	cfg2.InstanceID = "second"
	rt2 := startRuntime(t, cfg2)
	if err := rt2.Register(def); err != nil {
		t.Fatal(err)
	}
	part := regexp.MustCompile(`owned_shards="(\d+) of 64"`)
	waitFor(t, 10*time.Second, "a shard-split line with part of the shards", func() bool {
		return part.MatchString(logs.String())
	})
	if n := part.FindStringSubmatch(logs.String())[1]; n == "0" || n == "64" {
		t.Fatalf("with two instances, first owns %s of 64 shards", n)
	}
}

// holdAndDiscard submits n tasks whose first attempt fails, waits until
// rt holds every retry (due in a second), and discards them all at once.
func holdAndDiscard(t *testing.T, rt *Runtime, name string, n int) {
	t.Helper()
	// The retries are due 3 s after the first attempts fail: the discard
	// must come before that, on a machine that may be slow (1 s was not
	// always enough under load).
	f := newOnceFailing(name, 3*time.Second)
	if err := rt.Register(f.def); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range n {
		if _, err := rt.Submit(ctx, Call{Task: f.def, Args: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	heldFilter := Filter{Name: name, States: []State{StateRetrying}}
	waitFor(t, 5*time.Second, "every first attempt to fail and be held", func() bool {
		tasks, err := rt.Inspector().List(ctx, heldFilter)
		if err != nil {
			t.Fatal(err)
		}
		held := 0
		for _, task := range tasks {
			if task.LeaseOwner == rt.InstanceID() {
				held++
			}
		}
		return held == n
	})
	in := rt.Inspector()
	in.SingleOperatorDiscard = true
	discarded, err := in.DiscardWhere(ctx, heldFilter, "bulk discard in a test", false)
	if err != nil || discarded != n {
		t.Fatalf("DiscardWhere: %d, %v; want %d (a retry started before the discard?)", discarded, err, n)
	}
}

// checkOneSkipLine checks that logs hold one line about held retries not
// started, which counts n tasks of name.
func checkOneSkipLine(t *testing.T, logs *syncBuffer, name string, n int) {
	t.Helper()
	lines := logLines(logs, "not started")
	if len(lines) != 1 {
		t.Fatalf("%d lines about held retries not started, want 1:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if want := fmt.Sprintf(`tasks=%d names="%s (%d)"`, n, name, n); !strings.Contains(lines[0], want) {
		t.Fatalf("line %s\nlacks %s", lines[0], want)
	}
}

// An operator's bulk discard of held retries makes one summary line, not
// one warning per task, once RetryHold has passed since the first start
// found a retry discarded.
func TestBulkDiscardOfHeldRetriesLogsOneLine(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		var logs syncBuffer
		cfg := testConfig(dsn)
		cfg.Logger = logs.logger()
		cfg.LeaseDuration = 5 * time.Second // RetryHold: holds holdAndDiscard's 3-s retries
		rt := startRuntime(t, cfg)
		holdAndDiscard(t, rt, "discarded-while-held", 5)
		waitFor(t, 20*time.Second, "the summary of held retries not started", func() bool {
			return len(logLines(&logs, "not started")) > 0
		})
		// Stop closes any window still open: every line is in by then.
		if err := rt.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		checkOneSkipLine(t, &logs, "discarded-while-held", 5)
	})
}

// Stop logs the summary of a window still open.
func TestStopLogsHeldRetriesSkippedSoFar(t *testing.T) {
	var logs syncBuffer
	cfg := testConfig(testdb.SQLiteDSN(t))
	cfg.Logger = logs.logger()
	cfg.RetryHold = time.Hour // the window outlasts the test
	rt := startRuntime(t, cfg)
	holdAndDiscard(t, rt, "discarded-before-stop", 3)
	waitFor(t, 10*time.Second, "the starts of the discarded retries to be refused", func() bool {
		return rt.holds.Held() == 0 && rt.holds.Waiting() == 0
	})
	if lines := logLines(&logs, "not started"); len(lines) != 0 {
		t.Fatalf("logged before the window closed: %q", lines)
	}
	if err := rt.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkOneSkipLine(t, &logs, "discarded-before-stop", 3)
}

// flagOrphans returns only the rows its UPDATE changed: a row that moved
// between its SELECT and its UPDATE (here: an SQLite trigger makes the
// UPDATE skip it, as a claim in between would) is not named.
func TestFlagOrphansNamesOnlyFlaggedRows(t *testing.T) {
	s := openTestStore(t, testdb.SQLiteDSN(t))
	mustInsert(t, s, sampleTask("gone", StatePending, 1, 0), sampleTask("moved", StatePending, 1, 0))
	if _, err := dbx(s).Exec("CREATE TRIGGER skip_moved BEFORE UPDATE OF error_msg ON argo_task WHEN OLD.task_id = 'moved' BEGIN SELECT RAISE(IGNORE); END"); err != nil {
		t.Fatal(err)
	}
	flagged, err := s.FlagOrphans(context.Background(), []string{"other"}, []string{"me"}, 10, 20, 10)
	if err != nil || !slices.Equal(flagged, []string{"gone"}) {
		t.Fatalf("flagOrphans: %q, %v; want [gone]", flagged, err)
	}
}
