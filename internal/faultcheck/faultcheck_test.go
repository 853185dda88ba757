package faultcheck

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
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
	flagSeed     = flag.Uint64("faultcheck.seed", 0, "seed of the workload and the fault schedule (default: FAULTCHECK_SEED, else random; a failure prints it)")
	flagDuration = flag.Duration("faultcheck.duration", 0, "how long the workload runs under faults (default: FAULTCHECK_DURATION, else 30s, 10s under -short; -faultcheck.duration=1h for a soak)")
	flagBound    = flag.Duration("faultcheck.bound", 0, "after the faults stop, every accepted call must be terminal within this (default 45s, 60s on Galera)")
	flagFeatures = flag.String("faultcheck.features", "", "workload features, comma-separated, \"all\", or +x/-x on the defaults (default: FAULTCHECK_FEATURES, else "+strings.Join(DefaultFeatures, ",")+")")
	flagFaults   = flag.String("faultcheck.faults", "", "fault kinds, comma-separated, \"all\", \"none\", or +x/-x on the defaults (default: FAULTCHECK_FAULTS, else "+strings.Join(DefaultFaults, ",")+")")
	flagExpect   = flag.String("faultcheck.expect", "", "invariants whose violations are known breaks, logged but not failed, comma-separated or \"none\" (default: FAULTCHECK_EXPECT, else "+strings.Join(DefaultExpected, ",")+")")
	flagSlots    = flag.Int("faultcheck.workers", 3, "worker processes (on Galera one per node, at most the nodes)")
)

// settings are the run's parameters, from the flags, else the environment.
type settings struct {
	seed     uint64
	duration time.Duration
	bound    time.Duration
	features Features
	faults   Faults
	expect   map[string]bool
}

func loadSettings(t *testing.T, bound time.Duration) settings {
	t.Helper()
	var s settings
	s.seed = *flagSeed
	if s.seed == 0 {
		if v := os.Getenv("FAULTCHECK_SEED"); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatalf("FAULTCHECK_SEED=%q: %v", v, err)
			}
			s.seed = n
		} else {
			s.seed = rand.Uint64()>>16 | 1
		}
	}
	s.duration = *flagDuration
	if s.duration == 0 {
		s.duration = 30 * time.Second
		if testing.Short() {
			s.duration = 10 * time.Second
		}
		if v := os.Getenv("FAULTCHECK_DURATION"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("FAULTCHECK_DURATION=%q: %v", v, err)
			}
			s.duration = d
		}
	}
	s.bound = *flagBound
	if s.bound == 0 {
		s.bound = bound
	}
	feats, faults := *flagFeatures, *flagFaults
	if feats == "" {
		feats = os.Getenv("FAULTCHECK_FEATURES")
	}
	if faults == "" {
		faults = os.Getenv("FAULTCHECK_FAULTS")
	}
	expect := *flagExpect
	if expect == "" {
		expect = os.Getenv("FAULTCHECK_EXPECT")
	}
	if expect == "" {
		expect = strings.Join(DefaultExpected, ",")
	}
	s.expect = map[string]bool{}
	for _, inv := range strings.Split(expect, ",") {
		if inv = strings.TrimSpace(inv); inv != "" && inv != "none" {
			s.expect[inv] = true
		}
	}
	var err error
	if s.features, err = ParseFeatures(feats); err != nil {
		t.Fatal(err)
	}
	if s.faults, err = ParseFaults(faults); err != nil {
		t.Fatal(err)
	}
	return s
}

// target is the database of a run and how to reach and hurt it.
type target struct {
	engine    string
	dsn       string                      // the checker's own connection
	workerDSN func(slot int) string       // each worker's (through its proxy, if any)
	proxies   []*testdb.FaultProxy        // by slot; nil without a proxy (SQLite, Galera)
	server    func(t *testing.T, f Fault) // the server fault; nil where there is none
	lease     time.Duration
	heartbeat time.Duration
	instTO    time.Duration
	slots     int
	bound     time.Duration
	// setup, if set, runs on the checker's connection before the workers start.
	setup func(t *testing.T, ctx context.Context, db *sql.DB, s settings)
}

// TestFaultCheckSQLite runs the checker on one SQLite file: kill -9, Stop
// mid-attempt and clock steps (no proxy, no server to restart).
func TestFaultCheckSQLite(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(keepDir(t, "db"), "argo.db")
	runTarget(t, target{engine: "sqlite", dsn: dsn, workerDSN: func(int) string { return dsn },
		lease: 2 * time.Second, heartbeat: 300 * time.Millisecond, slots: *flagSlots, bound: 45 * time.Second})
}

// TestFaultCheckMariaDB runs the checker on a private MariaDB server (so
// that it can be killed and restarted without disturbing other tests),
// each worker through a fault proxy of its own.
func TestFaultCheckMariaDB(t *testing.T) {
	testdb.MySQLServerDSN(t) // skips as every MariaDB test does when make test gave no server
	srv := testdb.NewMySQLServer(t)
	dsn := srv.DSN(t)
	tg := target{engine: "mariadb", dsn: dsn, lease: 2 * time.Second, heartbeat: 300 * time.Millisecond, slots: *flagSlots, bound: 45 * time.Second}
	for range tg.slots {
		tg.proxies = append(tg.proxies, testdb.NewFaultProxy(t, dsn))
	}
	// A session cut off mid-transaction (cutanswer on a dependent submit's
	// INSERT) keeps its locks until the server closes it: after the
	// session's wait_timeout, scaled as the leases are (2 s here against 30 s
	// by default: argo's 60 s default becomes 10 s), so that it is gone well
	// within the settle bound (runtime.MySQLIdleTimeoutDefault).
	tg.workerDSN = func(slot int) string { return tg.proxies[slot].DSN(dsn) + "&wait_timeout=10" }
	tg.setup = func(t *testing.T, ctx context.Context, db *sql.DB, s settings) {
		if s.features[FeatureBigSubmit] {
			// The server's own default (make test's servers allow 64 MiB), so
			// that a big call is larger than the server accepts.
			if _, err := db.ExecContext(ctx, "SET GLOBAL max_allowed_packet = 16777216"); err != nil {
				t.Fatal(err)
			}
		}
	}
	tg.server = func(t *testing.T, f Fault) {
		srv.Kill(t)
		time.Sleep(f.Dur)
		srv.Start(t)
	}
	runTarget(t, tg)
}

// TestFaultCheckGalera runs the checker on the 3-node Galera cluster, one
// worker per node (its failover DSN names its own node first). With the
// server fault on (the default) it holds the cluster exclusively and kills
// a node; the leases are those a node's crash needs (docs/deployment.md).
func TestFaultCheckGalera(t *testing.T) {
	s := loadSettings(t, 60*time.Second)
	var g *testdb.Galera
	if s.faults[FaultServer] {
		g = testdb.DisruptGaleraCluster(t)
	} else {
		g = testdb.GaleraCluster(t)
	}
	gdb := g.NewDatabase(t)
	tg := target{engine: "galera", dsn: gdb.DSN(testdb.SteadyNode), lease: 8 * time.Second, heartbeat: time.Second,
		instTO: 10 * time.Second, slots: min(*flagSlots, g.Nodes()), bound: 60 * time.Second}
	tg.workerDSN = func(slot int) string { return gdb.FailoverDSN(slot + 1) }
	tg.server = func(t *testing.T, f Fault) {
		node := f.Slot%g.Nodes() + 1
		g.KillNode(t, node)
		time.Sleep(f.Dur)
		g.StartNode(t, node)
	}
	runTarget(t, tg)
}

// keepDir is a temporary directory, or with FAULTCHECK_KEEP=DIR the
// directory DIR/<test>/<name>, kept after the test for a look at the
// histories (and the SQLite file).
func keepDir(t *testing.T, name string) string {
	keep := os.Getenv("FAULTCHECK_KEEP")
	if keep == "" {
		return t.TempDir()
	}
	dir := filepath.Join(keep, t.Name(), name)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("faultcheck: keeping %s", dir)
	return dir
}

// proc is one incarnation of a worker process.
type proc struct {
	slot, gen int
	id        string
	hist      string
	stderr    string
	cmd       *exec.Cmd
	done      chan struct{}
}

func (p *proc) exited(timeout time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// driver runs one check.
type driver struct {
	t      *testing.T
	tg     target
	s      settings
	dir    string
	bin    string
	until  time.Time
	mu     sync.Mutex
	all    []*proc
	live   []*proc
	died   map[string]time.Time
	cutOff map[string]bool
	// partitioned: the instances a partition cut off (Input.Partitioned).
	partitioned map[string]bool
	done        []Fault
	cleanly     map[*proc]bool // stopped by SIGTERM on purpose
	restarts    int            // workers started again after runtime.Start failed
}

func runTarget(t *testing.T, tg target) {
	s := loadSettings(t, tg.bound)
	if tg.engine == "galera" {
		if *flagExpect == "" && os.Getenv("FAULTCHECK_EXPECT") == "" && len(GaleraExpected) > 0 {
			for _, inv := range GaleraExpected {
				s.expect[inv] = true
			}
			t.Logf("faultcheck galera: %v logged, not failed (GaleraExpected)", GaleraExpected)
		}
		if *flagFeatures == "" && os.Getenv("FAULTCHECK_FEATURES") == "" && len(GaleraOff) > 0 {
			for _, f := range GaleraOff {
				delete(s.features, f)
			}
			t.Logf("faultcheck galera: features %v left out (GaleraOff)", GaleraOff)
		}
	}
	if tg.engine == "mariadb" && *flagFeatures == "" && os.Getenv("FAULTCHECK_FEATURES") == "" {
		for _, f := range MariaDBOn {
			s.features[f] = true
		}
		t.Logf("faultcheck mariadb: features %v added (MariaDBOn)", MariaDBOn)
	}
	run := Run{Engine: tg.engine, Seed: s.seed, Duration: s.duration, Bound: s.bound, Features: s.features, Faults: s.faults, Slots: tg.slots}
	var expect []string
	for inv := range s.expect {
		expect = append(expect, inv)
	}
	slices.Sort(expect)
	run.Expect = strings.Join(expect, ",")
	t.Logf("faultcheck %s: seed %d (replay: %s)", tg.engine, s.seed, run.Replay(t.Name()))
	if tg.slots < 3 {
		t.Logf("faultcheck: only %d workers", tg.slots)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.duration+s.bound+5*time.Minute)
	defer cancel()
	db, dialect, err := runtime.OpenDB(tg.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := runtime.Migrate(ctx, db, dialect); err != nil {
		t.Fatal(err)
	}
	if tg.setup != nil {
		tg.setup(t, ctx, db, s)
	}
	d := &driver{t: t, tg: tg, s: s, dir: keepDir(t, "histories"), died: map[string]time.Time{}, cutOff: map[string]bool{}, partitioned: map[string]bool{}, cleanly: map[*proc]bool{}}
	d.bin = workerproc.Build(t, d.dir, "./faultworker", "faultworker")
	t.Cleanup(d.killAll)

	// The schedule: faults the target cannot carry out are left out.
	var sched []Fault
	for _, f := range Schedule(s.seed, s.duration, tg.slots, s.faults, tg.server != nil) {
		if (f.Kind == FaultPartition || f.Kind == FaultCutAnswer || f.Kind == FaultClaimCut) && tg.proxies == nil {
			continue
		}
		sched = append(sched, f)
	}
	run.Schedule = sched

	start := time.Now()
	run.Start = start
	d.until = start.Add(s.duration)
	d.live = make([]*proc, tg.slots)
	for slot := range tg.slots {
		d.live[slot] = d.start(slot, 0)
	}
	opDone := make(chan struct{})
	if s.features[FeatureOperator] {
		go func() {
			defer close(opDone)
			d.operate(ctx, db, dialect)
		}()
	} else {
		close(opDone)
	}
	for _, f := range sched {
		if !d.sleepUntil(start.Add(f.At)) {
			break
		}
		d.fault(f)
		d.done = append(d.done, f)
	}
	d.sleepUntil(d.until)
	d.heal()
	<-opDone
	faultsEnd := time.Now()

	// Settle: every worker has finished submitting, and no call is open.
	deadline := faultsEnd.Add(s.bound)
	for slot := range tg.slots {
		for !d.submitDone(d.live[slot]) && time.Now().Before(deadline) {
			d.checkAlive()
			time.Sleep(100 * time.Millisecond)
		}
	}
	open := -1
	for time.Now().Before(deadline) {
		d.checkAlive()
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM argo_task WHERE task_status NOT IN (?, ?, ?, ?, ?)",
			runtime.StateSucceeded, runtime.StateRecovered, runtime.StateDead, runtime.StateDiscarded, runtime.StateSkipped).Scan(&open); err != nil {
			t.Logf("faultcheck: counting open calls: %v", err)
		} else if open == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	run.Settle = time.Since(faultsEnd)
	run.Done = d.done
	instances := readInstances(ctx, db)
	if tg.engine == "mariadb" {
		// The deadlocks InnoDB resolved (since the server's last start): a
		// dependent submit rolled back for one is retried (#22 break 3a).
		var name string
		var n int64
		if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'").Scan(&name, &n); err == nil {
			t.Logf("faultcheck mariadb: %d deadlocks since the server's last start", n)
		}
	}
	d.stopAll()

	in := Input{Died: d.died, CutOff: d.cutOff, Partitioned: d.partitioned, Stopped: map[string]bool{}, CancelBound: d.tg.lease + 2*time.Second}
	for p := range d.cleanly {
		in.Stopped[p.id] = true
	}
	if in.Records, err = ReadHistories(d.dir); err != nil {
		t.Fatal(err)
	}
	in.Rows, in.Attempts = readTables(t, ctx, db)
	in.Crypt = s.features[FeatureCrypt]
	if in.Crypt {
		t.Logf("faultcheck crypt: %s", CryptSummary(in.Records))
	}
	in.Budget = readBudget(t, ctx, db)
	in.Fallbacks = readFallbacks(t, ctx, db)
	in.TransientTrail = readTransientTrail(t, ctx, db)
	var cancelEnds []time.Duration
	in.CancelEnded = func(_ string, after time.Duration) { cancelEnds = append(cancelEnds, after) }
	logProgress(t, in)
	logErrorCodes(t, in)
	logTransitions(t, in) // transitions_test.go
	var vs, known []Violation
	for _, v := range Check(in) {
		if s.expect[v.Inv] {
			known = append(known, v)
		} else {
			vs = append(vs, v)
		}
	}
	fig := Count(in.Records, len(in.Rows))
	t.Log(run.Summary(fig))
	if len(cancelEnds) > 0 {
		slices.Sort(cancelEnds)
		t.Logf("faultcheck: %d runs found running by a cancel ended after its answer: median %s, max %s (bound %s; heartbeat %s, renewals every %s)",
			len(cancelEnds), cancelEnds[len(cancelEnds)/2].Round(time.Millisecond), cancelEnds[len(cancelEnds)-1].Round(time.Millisecond), in.CancelBound, d.tg.heartbeat, (d.tg.lease / 3).Round(time.Millisecond))
	}
	if d.restarts > 0 {
		t.Logf("faultcheck: %d workers started again after runtime.Start could not reach the database", d.restarts)
	}
	if len(known) > 0 {
		t.Logf("faultcheck: violations of invariants expected to fail (-faultcheck.expect), not failing the test:\n%s", run.Report(t.Name(), known, 5))
	}
	if len(vs) > 0 {
		t.Errorf("%s", run.Report(t.Name(), vs, 12))
		t.Logf("faultcheck: argo_instance when the calls had settled (or the bound passed):\n%s", instances)
	}
	if fig.Executions == 0 || fig.Submits < 50 {
		t.Errorf("faultcheck: only %d submits and %d executions: the workload did not run (seed %d)", fig.Submits, fig.Executions, s.seed)
	}
}

// operate runs the operator (feature operator) until the workload ends,
// and closes the breaker it may have left open.
func (d *driver) operate(ctx context.Context, db *sql.DB, dialect string) {
	h, err := NewWriter(filepath.Join(d.dir, "operator.hist"), "operator")
	if err != nil {
		d.t.Error(err)
		return
	}
	defer h.Close()
	o := NewOperator(db, dialect, d.s.seed, h)
	o.Crypt = d.s.features[FeatureCrypt]
	for {
		pause := o.Pause()
		if time.Now().Add(pause).After(d.until) {
			break
		}
		time.Sleep(pause)
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		o.Act(actx)
		cancel()
	}
	for range 20 { // the server may be restarting
		if err = o.Close(ctx); err == nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	d.t.Error(err)
}

// sleepUntil waits until at, watching the workers; false if the test is over.
func (d *driver) sleepUntil(at time.Time) bool {
	for time.Now().Before(at) {
		d.checkAlive()
		time.Sleep(min(100*time.Millisecond, time.Until(at)))
	}
	return true
}

// checkAlive fails the test if a worker exited by itself once started. A
// worker whose runtime could not start (runtime.Start found the database
// out of reach: the server is down or the worker cut off) is started again,
// as a service manager would.
func (d *driver) checkAlive() {
	for slot, p := range d.live {
		select {
		case <-p.done:
			if d.ready(p) {
				d.t.Fatalf("worker %s exited by itself: %v (seed %d)\n%s", p.id, p.cmd.ProcessState, d.s.seed, workerproc.Tail(p.stderr, 30))
			}
			d.died[p.id] = time.Now()
			d.restarts++
			time.Sleep(500 * time.Millisecond)
			d.live[slot] = d.start(slot, p.gen+1)
		default:
		}
	}
}

// ready reports whether p's runtime has started.
func (d *driver) ready(p *proc) bool {
	recs, err := ReadHistory(p.hist)
	return err == nil && slices.ContainsFunc(recs, func(r Record) bool { return r.Kind == KindReady })
}

// start starts incarnation gen of slot, going on at the first operation its
// predecessors had not begun.
func (d *driver) start(slot, gen int) *proc {
	t := d.t
	p := &proc{slot: slot, gen: gen, id: fmt.Sprintf("w%d.%d", slot, gen), done: make(chan struct{})}
	p.hist = filepath.Join(d.dir, p.id+".hist")
	p.stderr = filepath.Join(d.dir, p.id+".stderr")
	first := 0
	for g := range gen {
		recs, err := ReadHistory(filepath.Join(d.dir, fmt.Sprintf("w%d.%d.hist", slot, g)))
		if errors.Is(err, fs.ErrNotExist) {
			continue // killed before it opened its history
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Kind == KindSubmit && r.Ev == "begin" {
				var s, k, i int
				if _, err := fmt.Sscanf(r.Op, "%d-%d-%d", &s, &k, &i); err == nil && k >= first {
					first = k + 1
				}
			}
		}
	}
	errf, err := os.Create(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-dsn", d.tg.workerDSN(slot), "-id", p.id, "-slot", strconv.Itoa(slot), "-seed", strconv.FormatUint(d.s.seed, 10),
		"-first-op", strconv.Itoa(first), "-submit-until", strconv.FormatInt(d.until.UnixMilli(), 10), "-features", d.s.features.String(),
		"-hist", p.hist, "-clock-file", filepath.Join(d.dir, fmt.Sprintf("w%d.clock", slot)),
		"-direct-dsn", d.tg.dsn,
		"-lease", d.tg.lease.String(), "-heartbeat", d.tg.heartbeat.String(), "-instance-timeout", d.tg.instTO.String()}
	p.cmd = exec.Command(d.bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = errf, errf
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.id, err)
	}
	go func() { p.cmd.Wait(); errf.Close(); close(p.done) }()
	d.mu.Lock()
	d.all = append(d.all, p)
	d.mu.Unlock()
	return p
}

// fault carries out f.
func (d *driver) fault(f Fault) {
	t := d.t
	switch f.Kind {
	case FaultKill:
		p := d.live[f.Slot]
		p.cmd.Process.Signal(syscall.SIGKILL)
		if !p.exited(30 * time.Second) {
			t.Fatalf("worker %s still running 30s after SIGKILL", p.id)
		}
		d.died[p.id] = time.Now()
		time.Sleep(300 * time.Millisecond)
		d.live[f.Slot] = d.start(f.Slot, p.gen+1)
	case FaultStop:
		p := d.waitReady(f.Slot) // before, SIGTERM would find no handler
		d.cleanly[p] = true
		p.cmd.Process.Signal(syscall.SIGTERM)
		if !p.exited(40 * time.Second) {
			t.Fatalf("worker %s did not stop within 40s of SIGTERM (seed %d)", p.id, d.s.seed)
		}
		d.checkStopped(p)
		d.live[f.Slot] = d.start(f.Slot, p.gen+1)
	case FaultClock:
		path := filepath.Join(d.dir, fmt.Sprintf("w%d.clock", f.Slot))
		if err := os.WriteFile(path, []byte(f.Offset.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		d.fault(Fault{Kind: FaultStop, Slot: f.Slot}) // restarted with the offset
	case FaultCutAnswer:
		d.tg.proxies[f.Slot].CutAnswer("INSERT INTO argo_task (", 1)
	case FaultClaimCut:
		d.cutOff[d.live[f.Slot].id] = true
		d.tg.proxies[f.Slot].CutCommit(1)
	case FaultPartition:
		p := d.tg.proxies[f.Slot]
		d.cutOff[d.live[f.Slot].id] = true
		d.partitioned[d.live[f.Slot].id] = true
		d.partition(p, f.Mode, true)
		d.sleepUntil(time.Now().Add(f.Dur))
		d.partition(p, f.Mode, false)
	case FaultServer:
		d.tg.server(t, f)
	}
}

// partition cuts p off (or heals it) the way mode says, where the proxy can.
func (d *driver) partition(p *testdb.FaultProxy, mode string, on bool) {
	switch mode {
	case "blackhole":
		if bp, ok := any(p).(interface{ SetBlackhole(bool) }); ok {
			bp.SetBlackhole(on)
			return
		}
	case "freeze":
		if fp, ok := any(p).(interface{ SetFrozen(bool) }); ok {
			fp.SetFrozen(on)
			return
		}
	}
	p.SetRefusing(on)
}

// heal ends every fault still on.
func (d *driver) heal() {
	for _, p := range d.tg.proxies {
		for _, m := range []string{"blackhole", "freeze", "refuse"} {
			d.partition(p, m, false)
		}
	}
}

// waitReady waits (up to 30 s) until the runtime of slot's worker has
// started (checkAlive starts it again meanwhile if its start failed), and
// returns that worker.
func (d *driver) waitReady(slot int) *proc {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		d.checkAlive()
		if p := d.live[slot]; d.ready(p) {
			return p
		}
		time.Sleep(50 * time.Millisecond)
	}
	p := d.live[slot]
	d.t.Fatalf("worker %s did not start within 30s (seed %d)\n%s", p.id, d.s.seed, workerproc.Tail(p.stderr, 30))
	return nil
}

// submitDone reports whether p has written its last submit.
func (d *driver) submitDone(p *proc) bool {
	recs, err := ReadHistory(p.hist)
	if err != nil {
		return false
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Kind == KindDone {
			return true
		}
	}
	return false
}

// stopAll stops the live workers with SIGTERM; each must exit cleanly.
func (d *driver) stopAll() {
	for _, p := range d.live {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range d.live {
		if !p.exited(40 * time.Second) {
			d.t.Errorf("worker %s did not stop within 40s of SIGTERM", p.id)
			continue
		}
		d.checkStopped(p)
	}
}

// checkStopped fails the test unless p, stopped by SIGTERM, exited cleanly,
// or with a Stop that returned an error (the database out of reach: what
// it left is checked like a kill's).
func (d *driver) checkStopped(p *proc) {
	if p.cmd.ProcessState.Success() {
		return
	}
	if p.cmd.ProcessState.ExitCode() == 4 {
		d.t.Logf("faultcheck: worker %s: Runtime.Stop returned an error: %s", p.id, workerproc.Tail(p.stderr, 1))
		d.died[p.id] = time.Now()
		return
	}
	d.t.Errorf("worker %s did not stop cleanly: %v (seed %d)\n%s", p.id, p.cmd.ProcessState, d.s.seed, workerproc.Tail(p.stderr, 30))
}

func (d *driver) killAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.all {
		p.cmd.Process.Kill()
		if !p.exited(30 * time.Second) {
			d.t.Errorf("worker %s (pid %d) still running 30s after SIGKILL", p.id, p.cmd.Process.Pid)
		}
	}
}

// readTables reads the task rows and the attempt history.
func readTables(t *testing.T, ctx context.Context, db *sql.DB) ([]Row, []AttemptRow) {
	t.Helper()
	var rows []Row
	rs, err := db.QueryContext(ctx, "SELECT id, task_id, task_status, execute_times, task_parameter, COALESCE(order_key, ''), shard_key, COALESCE(lease_owner, ''), lease_until, execute_time, COALESCE(requeued_from, 0), progress_note, progress_attempt, tenant, error_code FROM argo_task")
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var r Row
		var tenant string
		if err := rs.Scan(&r.ID, &r.Name, &r.State, &r.ExecuteTimes, &r.Param, &r.OrderKey, &r.Shard, &r.LeaseOwner, &r.LeaseUntil, &r.Due, &r.RequeuedFrom, &r.ProgressNote, &r.ProgressAttempt, &tenant, &r.ErrorCode); err != nil {
			t.Fatal(err)
		}
		OpenRow(&r, tenant) // crypt.go
		rows = append(rows, r)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	rs.Close()
	var atts []AttemptRow
	rs, err = db.QueryContext(ctx, "SELECT task_pk, attempt, outcome, worker, SUBSTR(COALESCE(error_msg, ''), 1, 80), progress_note, error_code, id, from_state, to_state FROM argo_task_attempt WHERE kind = 'attempt'")
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var a AttemptRow
		if err := rs.Scan(&a.Task, &a.Attempt, &a.Outcome, &a.Worker, &a.Error, &a.ProgressNote, &a.ErrorCode, &a.ID, &a.From, &a.To); err != nil {
			t.Fatal(err)
		}
		atts = append(atts, a)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	rs.Close()
	sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	return rows, atts
}

// readTransientTrail counts the transient-fail requests in the operator
// trail, by task.
func readTransientTrail(t *testing.T, ctx context.Context, db *sql.DB) map[int64]int {
	t.Helper()
	rs, err := db.QueryContext(ctx, "SELECT task_pk FROM argo_operator_action WHERE action = ?", runtime.ActionTransientFail)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	out := map[int64]int{}
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out[id]++
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// readFallbacks reads the fallback rows of argo_task_attempt.
func readFallbacks(t *testing.T, ctx context.Context, db *sql.DB) []AttemptRow {
	t.Helper()
	rs, err := db.QueryContext(ctx, "SELECT task_pk, attempt, outcome, worker, id, from_state, to_state FROM argo_task_attempt WHERE kind = 'fallback'")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []AttemptRow
	for rs.Next() {
		var a AttemptRow
		if err := rs.Scan(&a.Task, &a.Attempt, &a.Outcome, &a.Worker, &a.ID, &a.From, &a.To); err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// readBudget reads the retry budget's counters of group BudgetGroup (nil:
// no row, the feature is off).
func readBudget(t *testing.T, ctx context.Context, db *sql.DB) *BudgetRow {
	t.Helper()
	var b BudgetRow
	err := db.QueryRowContext(ctx, "SELECT budget_start, budget_firsts, budget_retries FROM argo_flow WHERE group_name = ?", BudgetGroup).Scan(&b.Start, &b.Firsts, &b.Retries)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("faultcheck: retry budget of %s: window from %s, %d first attempts and %d retries counted", BudgetGroup, clock(time.UnixMilli(b.Start)), b.Firsts, b.Retries)
	return &b
}

// readInstances lists the instances the table holds, for a failure's
// context (a stuck call's shard belongs to one of them).
func readInstances(ctx context.Context, db *sql.DB) string {
	rs, err := db.QueryContext(ctx, "SELECT instance_id, heartbeat_at, started_at FROM argo_instance ORDER BY instance_id")
	if err != nil {
		return err.Error()
	}
	defer rs.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "  (now %s)\n", clock(time.Now()))
	for rs.Next() {
		var id string
		var hb, started int64
		if err := rs.Scan(&id, &hb, &started); err != nil {
			return err.Error()
		}
		fmt.Fprintf(&b, "  %s: started %s, heartbeat %s\n", id, clock(time.UnixMilli(started)), clock(time.UnixMilli(hb)))
	}
	return b.String()
}

// logProgress says how much progress the run reported and stored (the
// progress invariant's coverage).
func logProgress(t *testing.T, in Input) {
	var reports, rows, hist int
	for _, r := range in.Records {
		if r.Kind == KindProgress {
			reports++
		}
	}
	for _, r := range in.Rows {
		if r.ProgressAttempt > 0 {
			rows++
		}
	}
	for _, a := range in.Attempts {
		if a.ProgressNote != "" {
			hist++
		}
	}
	t.Logf("faultcheck: %d progress reports made; %d task rows and %d history rows hold one", reports, rows, hist)
}
