package chaos

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/internal/workerproc"
	"github.com/argo-retry/argo/runtime"
)

var (
	flagTasks     = flag.Int("chaos.tasks", 20000, "tasks the chaos test submits")
	flagLong      = flag.Bool("chaos.long", false, "run the chaos test longer: 5× the tasks, so many more kills")
	flagProcs     = flag.Int("chaos.procs", 4, "worker processes")
	flagKillEvery = flag.Duration("chaos.kill-every", 3*time.Second, "mean time between two SIGKILLs")
	flagTimeout   = flag.Duration("chaos.timeout", 0, "give up if the tasks are not done by then (default 5m plus 20ms a task)")
)

// Worker settings: short leases and heartbeats, so failover is quick.
const (
	workerLease     = 2 * time.Second
	workerHeartbeat = 300 * time.Millisecond
	workerThreads   = 8
	workerTaskTime  = 25 * time.Millisecond // so that a killed worker holds a few leases
	restartDelay    = 300 * time.Millisecond
)

// proc is one incarnation of a worker process.
type proc struct {
	id     string
	cmd    *exec.Cmd
	stderr string
	done   chan struct{}
}

// exited waits up to timeout for the process to exit and reports whether it did.
func (p *proc) exited(timeout time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// kill is one SIGKILL sent.
type kill struct {
	id   string
	pid  int
	at   time.Time
	held int // leases the instance held when it died
}

// TestChaosKill9 runs -chaos.procs worker processes on one MariaDB database
// through a backlog of -chaos.tasks tasks (a third failing transiently),
// SIGKILLs a random one every few seconds and restarts it, and checks that
// every task succeeded, none was lost, no (task, attempt) started twice and
// no task ran concurrently with itself. It reports the attempts rescued after
// kills and the failover time: kill to first re-run of the dead instance's
// tasks.
func TestChaosKill9(t *testing.T) {
	dsn := testdb.MySQLDSN(t)
	tasks, procs := *flagTasks, *flagProcs
	if *flagLong {
		tasks *= 5
	}
	dir := t.TempDir()
	bin := buildWorker(t, dir)
	timeout := *flagTimeout
	if timeout <= 0 {
		timeout = 5*time.Minute + time.Duration(tasks)*20*time.Millisecond
	}
	// Every query of the test, the feeder's included, ends by the test's
	// deadline and a margin for the checks: a statement stuck on a lock
	// fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), timeout+2*time.Minute)
	defer cancel()

	feed := newFeeder(t, dsn)
	db := feed.db
	// A backlog of a few seconds of work: enough that every instance has
	// work in its own shards (the split is uneven, and an idle instance does
	// not take another's shards), small enough that a rescued task does not
	// queue long behind others.
	backlog := max(300, procs*workerThreads*20)
	if err := feed.submit(ctx, min(backlog, tasks)); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var all []*proc
	startProc := func(slot, gen int) *proc {
		p := &proc{id: fmt.Sprintf("w%d.%d", slot, gen), done: make(chan struct{})}
		p.stderr = filepath.Join(dir, p.id+".stderr")
		errf, err := os.Create(p.stderr)
		if err != nil {
			t.Fatal(err)
		}
		p.cmd = exec.Command(bin, "-dsn", dsn, "-id", p.id, "-workers", strconv.Itoa(workerThreads),
			"-log", filepath.Join(dir, p.id+".log"), "-lease", workerLease.String(), "-heartbeat", workerHeartbeat.String(), "-work", workerTaskTime.String())
		p.cmd.Stdout, p.cmd.Stderr = errf, errf
		if err := p.cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", p.id, err)
		}
		go func() { p.cmd.Wait(); errf.Close(); close(p.done) }()
		mu.Lock()
		all = append(all, p)
		mu.Unlock()
		return p
	}
	t.Cleanup(func() { // whatever happened, leave no worker behind
		mu.Lock()
		defer mu.Unlock()
		for _, p := range all {
			p.cmd.Process.Kill()
			if !p.exited(30 * time.Second) {
				t.Errorf("worker %s (pid %d) still running 30s after SIGKILL", p.id, p.cmd.Process.Pid)
			}
		}
	})

	start := time.Now()
	feedCtx, stopFeed := context.WithCancel(ctx)
	defer stopFeed()
	feedErr := make(chan error, 1)
	go func() { feedErr <- feed.run(feedCtx, tasks, backlog) }()
	live := make([]*proc, procs)
	gens := make([]int, procs)
	for i := range live {
		live[i] = startProc(i, 0)
	}
	var kills []kill
	nextKill := start.Add(*flagKillEvery)
	deadline := start.Add(timeout)
	succeeded := 0
	for {
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM argo_task WHERE task_status = 3").Scan(&succeeded); err != nil {
			t.Fatal(err)
		}
		if succeeded >= tasks {
			break
		}
		select {
		case err := <-feedErr:
			if err != nil {
				t.Fatalf("submit: %v", err)
			}
			feedErr = nil
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s only %d of %d tasks succeeded (%d kills)", time.Since(start).Round(time.Second), succeeded, tasks, len(kills))
		}
		for _, p := range live {
			select {
			case <-p.done:
				t.Fatalf("worker %s exited by itself: %v\n%s", p.id, p.cmd.ProcessState, tail(p.stderr, 30))
			default:
			}
		}
		if time.Now().After(nextKill) {
			slot := rand.IntN(procs)
			p := live[slot]
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("kill %s: %v", p.id, err)
			}
			k := kill{id: p.id, pid: p.cmd.Process.Pid, at: time.Now()}
			if !p.exited(30 * time.Second) {
				t.Fatalf("worker %s (pid %d) still running 30s after SIGKILL", p.id, k.pid)
			}
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM argo_task WHERE lease_owner = ? AND task_status IN (1, 5)", p.id).Scan(&k.held); err != nil {
				t.Fatal(err)
			}
			kills = append(kills, k)
			time.Sleep(restartDelay)
			gens[slot]++
			live[slot] = startProc(slot, gens[slot])
			// Every kill-every on average, between half and one and a half of it.
			nextKill = time.Now().Add(*flagKillEvery/2 + rand.N(*flagKillEvery))
		}
		time.Sleep(200 * time.Millisecond)
	}
	elapsed := time.Since(start)

	// Stop the survivors cleanly.
	for _, p := range live {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range live {
		select {
		case <-p.done:
			if !p.cmd.ProcessState.Success() {
				t.Errorf("worker %s did not stop cleanly: %v\n%s", p.id, p.cmd.ProcessState, tail(p.stderr, 30))
			}
		case <-time.After(30 * time.Second):
			t.Errorf("worker %s did not stop within 30s of SIGTERM", p.id)
		}
	}

	r := check(t, db, feed.ids, readLogs(t, dir), kills)

	// Failover: from each kill to the rescue of the first lease the dead
	// instance held, to the first re-run of one of its attempts, and to the
	// last re-run.
	var detect, first, last []time.Duration
	for _, k := range kills {
		var lo, hi, det time.Duration = -1, -1, -1
		for _, a := range r.rescued[k.id] {
			if d := a.at.Sub(k.at); det < 0 || d < det {
				det = d
			}
			at, ok := r.nextStart(a.id, a.attempt)
			if !ok {
				t.Errorf("task %d: attempt %d of killed %s was rescued but never re-run", a.id, a.attempt, k.id)
				continue
			}
			d := at.Sub(k.at)
			if lo < 0 || d < lo {
				lo = d
			}
			if d > hi {
				hi = d
			}
		}
		if lo >= 0 {
			detect, first, last = append(detect, det), append(first, lo), append(last, hi)
		}
		if testing.Verbose() && lo >= 0 {
			t.Logf("kill %s at +%s: held %d leases; %d rescued, the first %s after the kill; first re-run after %s, last after %s",
				k.id, k.at.Sub(start).Round(time.Millisecond), k.held, len(r.rescued[k.id]), det.Round(time.Millisecond), lo.Round(time.Millisecond), hi.Round(time.Millisecond))
		} else if testing.Verbose() {
			t.Logf("kill %s at +%s: held %d leases, %d rescued", k.id, k.at.Sub(start).Round(time.Millisecond), k.held, len(r.rescued[k.id]))
		}
	}
	slices.Sort(detect)
	slices.Sort(first)
	slices.Sort(last)
	rescued := 0
	for _, v := range r.rescued {
		rescued += len(v)
	}
	if r.liveRescues > 0 {
		t.Logf("chaos: %d leases of instances that were not killed expired (a starved process): allowed, since leases and fencing keep them safe", r.liveRescues)
	}
	t.Logf("chaos: %d tasks, %d processes × %d workers, %d SIGKILLs in %s (%.0f tasks/s)", tasks, procs, workerThreads, len(kills), elapsed.Round(time.Millisecond), float64(tasks)/elapsed.Seconds())
	held := 0
	for _, k := range kills {
		if k.held > 0 {
			held++
		}
	}
	t.Logf("chaos: %d attempts started, %d rescued after kills (leases expired, attempts re-run; %d had started their work, the others were claimed but not yet begun); %d of %d kills hit an instance holding leases",
		r.started, rescued, r.interrupted, held, len(kills))
	if len(first) > 0 {
		ms := func(ds []time.Duration) string {
			return fmt.Sprintf("min %s, median %s, max %s", ds[0].Round(time.Millisecond), ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
		}
		t.Logf("chaos: failover over %d kills (lease %s, heartbeat %s): kill → first re-run of the dead instance's tasks: %s; kill → first lease rescued: %s; kill → last re-run: %s",
			len(first), workerLease, workerHeartbeat, ms(first), ms(detect), ms(last))
	} else if len(kills) > 0 {
		t.Errorf("%d kills but no rescued attempt: were the workers idle?", len(kills))
	}
	if len(kills) < 2 {
		t.Errorf("only %d kills: the run was too short to test anything", len(kills))
	}
}

// buildWorker builds ./chaosworker into dir.
func buildWorker(t *testing.T, dir string) string {
	t.Helper()
	return workerproc.Build(t, dir, "./chaosworker", "chaosworker")
}

// feeder submits the test's tasks through a runtime that is already
// stopped, so that it never claims a task itself: the worker processes do
// all the work. It keeps the backlog (tasks not yet finished) near a target,
// so that the workers are always busy but a rescued task does not queue
// behind thousands of others: the failover measured is the runtime's, not
// the backlog's.
type feeder struct {
	rt  *runtime.Runtime
	db  *sql.DB
	def *runtime.TaskDef

	mu   sync.Mutex
	ids  map[int64]int // task id → n
	next int
}

func newFeeder(t *testing.T, dsn string) *feeder {
	t.Helper()
	ctx := context.Background()
	db, dialect, err := runtime.OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rt, err := runtime.Start(ctx, runtime.Config{DB: db, Dialect: dialect, AutoMigrate: true, InstanceID: "chaos-submitter", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	return &feeder{rt: rt, db: db, def: Def(), ids: map[int64]int{}}
}

// submit writes the next k tasks in one transaction.
func (f *feeder) submit(ctx context.Context, k int) error {
	f.mu.Lock()
	from := f.next
	f.next += k
	f.mu.Unlock()
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	local := map[int64]int{}
	for i := from; i < from+k; i++ {
		raw, _ := json.Marshal(Args{N: i})
		id, err := f.rt.SubmitTx(ctx, tx, runtime.Call{Task: f.def, Args: raw})
		if err != nil {
			return err
		}
		local[id] = i
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, n := range local {
		f.ids[id] = n
	}
	return nil
}

func (f *feeder) submitted() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.next
}

// run feeds tasks until total are submitted, keeping at most backlog
// unfinished, in batches of 100 written by up to 4 transactions at once.
func (f *feeder) run(ctx context.Context, total, backlog int) error {
	const batch = 100
	for f.submitted() < total {
		var open int
		if err := f.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM argo_task WHERE task_status IN (0, 1, 2)").Scan(&open); err != nil {
			return err
		}
		if n := min((backlog-open)/batch, 4); n > 0 {
			var wg sync.WaitGroup
			errs := make(chan error, n)
			// The batches of this round share what is left to submit: each
			// computing it from submitted(), which the others have not
			// raised yet, submitted up to n-1 batches too many at the end,
			// and the test then stopped at `total` succeeded with the extra
			// tasks still unfinished.
			left := total - f.submitted()
			for range n {
				k := min(batch, left)
				if k <= 0 {
					break
				}
				left -= k
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := f.submit(ctx, k); err != nil {
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			if err := <-errs; err != nil {
				return err
			}
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// logEntry is one attempt as the workers' logs tell it.
type logEntry struct {
	starts int
	start  time.Time
	pid    int
	ended  bool
	end    time.Time
	ok     bool
}

type attemptKey struct {
	id      int64
	attempt int
}

// readLogs parses every worker log in dir.
func readLogs(t *testing.T, dir string) map[attemptKey]*logEntry {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no worker logs in %s: %v", dir, err)
	}
	out := map[attemptKey]*logEntry{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// A kill may cut the last line short: only that one may be partial.
			if len(fields) < 5 {
				continue
			}
			ms, err1 := strconv.ParseInt(fields[0], 10, 64)
			pid, err2 := strconv.Atoi(fields[1])
			id, err3 := strconv.ParseInt(fields[2], 10, 64)
			attempt, err4 := strconv.Atoi(fields[3])
			if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
				t.Fatalf("%s: bad line %q", name, sc.Text())
			}
			k := attemptKey{id, attempt}
			e := out[k]
			if e == nil {
				e = &logEntry{}
				out[k] = e
			}
			at := time.UnixMilli(ms)
			switch {
			case fields[4] == "start":
				e.starts++
				if e.starts == 1 || at.Before(e.start) {
					e.start, e.pid = at, pid
				}
			case fields[4] == "end" && len(fields) == 6:
				if e.ended {
					t.Errorf("task %d attempt %d ended twice", id, attempt)
				}
				e.ended, e.end, e.ok = true, at, fields[5] == "ok"
			default:
				t.Fatalf("%s: bad line %q", name, sc.Text())
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// rescue is an attempt whose lease expired, and when the rescuer took it.
type rescue struct {
	attemptKey
	at time.Time
}

type result struct {
	logs        map[attemptKey]*logEntry
	rescued     map[string][]rescue // instance → its attempts rescued
	started     int
	interrupted int // rescued attempts whose work had started (a log "start")
	liveRescues int
}

// nextStart is when the first attempt of task id after attempt started.
func (r *result) nextStart(id int64, attempt int) (time.Time, bool) {
	for a := attempt + 1; a <= attempt+50; a++ {
		if e := r.logs[attemptKey{id, a}]; e != nil && e.starts > 0 {
			return e.start, true
		}
	}
	return time.Time{}, false
}

// check compares the database with the logs: every submitted task is
// there and succeeded at an attempt that logged "end ok"; every attempt
// 1..execute_times has exactly one history row, consistent with the logs; no
// (task, attempt) started twice; no task ran two attempts at once.
func check(t *testing.T, db *sql.DB, ids map[int64]int, logs map[attemptKey]*logEntry, kills []kill) *result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := &result{logs: logs, rescued: map[string][]rescue{}}
	failures := 0
	errorf := func(format string, args ...any) {
		t.Helper()
		if failures++; failures <= 30 {
			t.Errorf(format, args...)
		}
	}
	defer func() {
		if failures > 30 {
			t.Errorf("... and %d more failures", failures-30)
		}
	}()
	killedAt := map[int]time.Time{}
	killedID := map[string]bool{}
	for _, k := range kills {
		killedAt[k.pid], killedID[k.id] = k.at, true
	}

	// The logs alone: once per (task, attempt), never two at once.
	type span struct {
		attempt    int
		start, end time.Time
	}
	spans := map[int64][]span{}
	for k, e := range logs {
		if e.starts == 0 {
			errorf("task %d attempt %d ended without starting", k.id, k.attempt)
			continue
		}
		r.started++
		if e.starts > 1 {
			errorf("task %d attempt %d started %d times", k.id, k.attempt, e.starts)
		}
		end := e.end
		if !e.ended {
			at, killed := killedAt[e.pid]
			if !killed {
				errorf("task %d attempt %d started in pid %d, never ended, and that process was not killed", k.id, k.attempt, e.pid)
				continue
			}
			end = at
		}
		spans[k.id] = append(spans[k.id], span{k.attempt, e.start, end})
	}
	for id, ss := range spans {
		slices.SortFunc(ss, func(a, b span) int { return a.start.Compare(b.start) })
		for i := 1; i < len(ss); i++ {
			if ss[i].start.Before(ss[i-1].end) {
				errorf("task %d: attempt %d started at %s while attempt %d ran (until %s)", id, ss[i].attempt,
					ss[i].start.Format("15:04:05.000"), ss[i-1].attempt, ss[i-1].end.Format("15:04:05.000"))
			}
		}
	}

	// The task rows: all there, all succeeded, at an attempt that ran to success.
	rows, err := db.QueryContext(ctx, "SELECT id, task_status, execute_times, task_parameter FROM argo_task")
	if err != nil {
		t.Fatal(err)
	}
	final := map[int64]int{}
	for rows.Next() {
		var id int64
		var state runtime.State
		var times int
		var param string
		if err := rows.Scan(&id, &state, &times, &param); err != nil {
			t.Fatal(err)
		}
		n, ok := ids[id]
		var a Args
		if err := json.Unmarshal([]byte(param), &a); err != nil || !ok || a.N != n {
			errorf("task %d: not submitted by the test (args %s)", id, param)
			continue
		}
		final[id] = times
		if state != runtime.StateSucceeded {
			errorf("task %d: %s", id, state)
			continue
		}
		if e := logs[attemptKey{id, times}]; e == nil || !e.ended || !e.ok {
			errorf("task %d succeeded at attempt %d, which did not run to success (log %+v)", id, times, e)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if len(final) != len(ids) {
		errorf("%d task rows, %d submitted: tasks lost", len(final), len(ids))
	}

	// The attempt history: one row per attempt, agreeing with the logs.
	hist := map[attemptKey]int{}
	// (A succeeded attempt is recorded on its task row.)
	rows, err = db.QueryContext(ctx, "SELECT task_pk, attempt, outcome, worker, finished_at FROM argo_task_attempt WHERE kind = 'attempt' "+
		"UNION ALL SELECT id, execute_times, 'succeeded', attempt_worker, gmt_modified FROM argo_task WHERE task_status = 3 AND attempt_started_at > 0")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k attemptKey
		var outcome, worker string
		var finished int64
		if err := rows.Scan(&k.id, &k.attempt, &outcome, &worker, &finished); err != nil {
			t.Fatal(err)
		}
		hist[k]++
		e := logs[k]
		switch outcome {
		case runtime.OutcomeSucceeded, runtime.OutcomeFailed:
			if e == nil || !e.ended || e.ok != (outcome == runtime.OutcomeSucceeded) {
				errorf("task %d attempt %d recorded %s, but the log says %+v", k.id, k.attempt, outcome, e)
			}
		case runtime.OutcomeLeaseExpired:
			r.rescued[worker] = append(r.rescued[worker], rescue{k, time.UnixMilli(finished)})
			if !killedID[worker] {
				r.liveRescues++
			}
			if e != nil && e.starts > 0 {
				r.interrupted++
			}
		default:
			errorf("task %d attempt %d: outcome %s", k.id, k.attempt, outcome)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	for id, times := range final {
		for a := 1; a <= times; a++ {
			if c := hist[attemptKey{id, a}]; c != 1 {
				errorf("task %d attempt %d has %d history rows, want 1", id, a, c)
			}
		}
	}
	for k := range hist {
		if times, ok := final[k.id]; !ok || k.attempt > times {
			errorf("history row for task %d attempt %d beyond its execute_times %d", k.id, k.attempt, times)
		}
	}
	return r
}

// tail returns the last n lines of a file.
func tail(path string, n int) string { return workerproc.Tail(path, n) }
