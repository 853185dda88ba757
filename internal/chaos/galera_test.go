package chaos

import (
	"bufio"
	"context"
	"database/sql"
	"flag"
	"fmt"
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
	"github.com/argo-retry/argo/runtime"
)

var (
	flagGaleraTasks    = flag.Int("chaos.galera.tasks", 10000, "tasks the Galera chaos test submits (2000 under -short)")
	flagGaleraClaimed  = flag.Bool("chaos.galera.claimed", true, "submit every task due now rather than run at once by its submitter, so that every first attempt is claimed by some process's poller")
	flagGaleraFailover = flag.Bool("chaos.galera.failover", true, "give each process a DSN naming every node (its own first) rather than its own node only")
	flagGaleraWriters  = flag.String("chaos.galera.writers", "all", `"all": each process writes through its own node (multi-writer: argoMultiWriter=true with -chaos.galera.failover); "one": every process writes through one node (single-writer: the elected one with -chaos.galera.failover, else node 1)`)
	flagGaleraOn       = flag.String("chaos.galera.on", "galera", `"galera": the cluster; "mariadb": the same workload on one database of the MariaDB server (ARGO_TEST_MYSQL_DSN), without the node kill, for comparison`)
	flagGaleraLease    = flag.Duration("chaos.galera.lease", galeraLease, "the workers' LeaseDuration")
	flagGaleraInstance = flag.Duration("chaos.galera.instance-timeout", galeraInstanceTimeout, "the workers' InstanceTimeout")
	flagGaleraTimeout  = flag.Duration("chaos.galera.timeout", 6*time.Minute, "give up if the Galera chaos test's tasks are not done by then")
)

// Settings of the Galera chaos test's worker processes. The instance
// timeout and the lease are above the write stall a SIGKILLed node causes
// (Galera's failure detection, some 6 s at its defaults): below it, every
// instance would drop the others from the shard split and see its leases
// expire at each node crash (docs/deployment.md).
const (
	galeraWorkerThreads   = 8
	galeraLease           = 8 * time.Second
	galeraHeartbeat       = time.Second
	galeraInstanceTimeout = 10 * time.Second
	galeraTaskTime        = 5 * time.Millisecond
	galeraFailEvery       = 5 // tasks with n%5 == 0 fail once: 20%
	galeraBacklog         = 500
	galeraSubmitTimeout   = 5 * time.Second // a caller's deadline for one submit

	// The faults, in order, once that share of the tasks has succeeded:
	// SIGKILL the app process of galeraKilledApp (restarted after
	// restartDelay), then SIGKILL Galera node galeraKilledNode for
	// galeraNodeDown and start it again.
	galeraAppKillAt  = 0.15
	galeraNodeKillAt = 0.30
	galeraKilledApp  = 2
	galeraKilledNode = 3
	galeraNodeDown   = 10 * time.Second

	galeraProcesses = 3 // one per node
)

// galeraProc is one incarnation of the worker process of one node.
type galeraProc struct {
	*proc
	node       int
	submitLog  string
	incarnated int
}

// TestChaosGalera runs three worker processes, one per node of the 3-node
// Galera cluster, each submitting a third of the tasks (20% fail once) and
// running whatever its runtime claims; meanwhile it SIGKILLs one app
// process (and restarts it) and one Galera node (for galeraNodeDown, then
// it rejoins by IST). It checks, from the database and the workers'
// fsynced logs, that every task was submitted once and succeeded, no
// (task, attempt) ran twice and no task ran on two workers at once, and it
// reports what callers saw (failed submits, the longest time without a
// successful submit), the cluster's write stall when the node died,
// throughput, and the cluster's conflict aborts per 10,000 tasks.
func TestChaosGalera(t *testing.T) {
	tasks := *flagGaleraTasks
	if testing.Short() {
		tasks = min(tasks, 2000)
	}
	// g and gdb stay nil in a comparison run on MariaDB (-chaos.galera.on).
	var g *testdb.Galera
	var gdb *testdb.GaleraDatabase
	var steadyDSN string
	switch *flagGaleraOn {
	case "galera":
		g = testdb.DisruptGaleraCluster(t)
		if g.Nodes() != galeraProcesses {
			t.Fatalf("the cluster has %d nodes, this test wants %d", g.Nodes(), galeraProcesses)
		}
		gdb = g.NewDatabase(t)
		steadyDSN = gdb.DSN(testdb.SteadyNode)
	case "mariadb":
		steadyDSN = testdb.MySQLDSN(t)
	default:
		t.Fatalf(`-chaos.galera.on=%q: want "galera" or "mariadb"`, *flagGaleraOn)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *flagGaleraTimeout+2*time.Minute)
	defer cancel()

	// The schema, through the steady node; the test reads through it too.
	db, dialect, err := runtime.OpenDB(steadyDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := runtime.Migrate(ctx, db, dialect); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE chaos_probe (id BIGINT AUTO_INCREMENT PRIMARY KEY, at BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	bin := buildWorker(t, dir)
	nodes := galeraProcesses
	share := (tasks + nodes - 1) / nodes
	workerDSN := func(node int) string {
		if gdb == nil {
			return steadyDSN
		}
		first := node
		if *flagGaleraWriters == "one" {
			first = testdb.SteadyNode
		} else if *flagGaleraWriters != "all" {
			t.Fatalf(`-chaos.galera.writers=%q: want "all" or "one"`, *flagGaleraWriters)
		}
		if *flagGaleraFailover {
			dsn := gdb.FailoverDSN(first)
			if *flagGaleraWriters == "all" {
				// Without it every process writes through the node the
				// failover connector elects (docs/deployment.md).
				sep := "?"
				if strings.Contains(dsn, "?") {
					sep = "&"
				}
				dsn += sep + "argoMultiWriter=true"
			}
			return dsn
		}
		return gdb.DSN(first)
	}
	t.Logf("galera chaos: worker of node 1 uses %s", runtime.RedactDSN(workerDSN(1)))

	var mu sync.Mutex
	var all []*galeraProc
	startProc := func(node, gen int) *galeraProc {
		p := &galeraProc{proc: &proc{id: fmt.Sprintf("w%d.%d", node, gen), done: make(chan struct{})}, node: node, incarnated: gen}
		p.stderr = filepath.Join(dir, p.id+".stderr")
		p.submitLog = filepath.Join(dir, p.id+".submits")
		var resume []string
		for i := 0; i < gen; i++ {
			resume = append(resume, filepath.Join(dir, fmt.Sprintf("w%d.%d.submits", node, i)))
		}
		errf, err := os.Create(p.stderr)
		if err != nil {
			t.Fatal(err)
		}
		from, to := (node-1)*share, min(node*share, tasks)
		p.cmd = exec.Command(bin, "-dsn", workerDSN(node), "-id", p.id,
			"-workers", strconv.Itoa(galeraWorkerThreads), "-log", filepath.Join(dir, p.id+".log"),
			"-lease", flagGaleraLease.String(), "-heartbeat", galeraHeartbeat.String(),
			"-instance-timeout", flagGaleraInstance.String(), "-work", galeraTaskTime.String(),
			"-fail-every", strconv.Itoa(galeraFailEvery),
			"-submit-from", strconv.Itoa(from), "-submit-to", strconv.Itoa(to), "-submit-log", p.submitLog,
			"-resume", strings.Join(resume, ","), "-backlog", strconv.Itoa(galeraBacklog),
			"-submit-timeout", galeraSubmitTimeout.String(), "-claimed="+strconv.FormatBool(*flagGaleraClaimed))
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
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range all {
			p.cmd.Process.Kill()
			if !p.exited(30 * time.Second) {
				t.Errorf("worker %s (pid %d) still running 30s after SIGKILL", p.id, p.cmd.Process.Pid)
			}
		}
	})

	var conflicts *testdb.ConflictCounter
	if g != nil {
		conflicts = g.CountConflicts(t)
	}
	start := time.Now()
	live := make([]*galeraProc, nodes+1) // by node
	for node := 1; node <= nodes; node++ {
		live[node] = startProc(node, 0)
	}

	var (
		kills                      []kill
		appKilled, nodeKilled      bool
		nodeKillAt, nodeBackAt     time.Time
		rejoin                     time.Duration
		firstFault                 time.Time
		succeededAtFirstFault      int
		probe                      *stallProbe
		succeeded                  int
		deadline                   = start.Add(*flagGaleraTimeout)
		nodeUp                     = true
		submittersDone, lastReport int
	)
	for {
		// Through the steady node: it answers all along (after the stall).
		var rows int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(task_status = ?), 0) FROM argo_task", runtime.StateSucceeded).Scan(&rows, &succeeded); err != nil {
			t.Fatal(err)
		}
		submittersDone = 0
		for node := 1; node <= nodes; node++ {
			if submitDone(live[node]) {
				submittersDone++
			}
		}
		// Done when every submitter has gone through its share and every
		// task there is has succeeded (the checks below find any missing).
		if submittersDone == nodes && succeeded == rows && nodeUp {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s only %d of %d tasks succeeded (%d of %d submitters done)", time.Since(start).Round(time.Second), succeeded, tasks, submittersDone, nodes)
		}
		if testing.Verbose() && time.Since(start) >= time.Duration(lastReport+10)*time.Second {
			lastReport = int(time.Since(start) / time.Second)
			t.Logf("+%ds: %d of %d tasks succeeded", lastReport, succeeded, tasks)
		}
		for node := 1; node <= nodes; node++ {
			select {
			case <-live[node].done:
				t.Fatalf("worker %s exited by itself: %v\n%s", live[node].id, live[node].cmd.ProcessState, tail(live[node].stderr, 30))
			default:
			}
		}
		switch {
		case !appKilled && succeeded >= int(galeraAppKillAt*float64(tasks)):
			appKilled = true
			firstFault, succeededAtFirstFault = time.Now(), succeeded
			p := live[galeraKilledApp]
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("kill %s: %v", p.id, err)
			}
			k := kill{id: p.id, pid: p.cmd.Process.Pid, at: time.Now()}
			if !p.exited(30 * time.Second) {
				t.Fatalf("worker %s (pid %d) still running 30s after SIGKILL", p.id, k.pid)
			}
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM argo_task WHERE lease_owner = ? AND task_status IN (?, ?)", p.id, runtime.StateRunning, runtime.StateFallingBack).Scan(&k.held); err != nil {
				t.Fatal(err)
			}
			kills = append(kills, k)
			t.Logf("+%s: SIGKILLed app process %s (node %d's), holding %d leases", k.at.Sub(start).Round(time.Millisecond), p.id, p.node, k.held)
			time.Sleep(restartDelay)
			live[galeraKilledApp] = startProc(galeraKilledApp, p.incarnated+1)
		case g != nil && appKilled && !nodeKilled && succeeded >= int(galeraNodeKillAt*float64(tasks)):
			nodeKilled, nodeUp = true, false
			conflicts.Sample() // the node's counters die with it
			probe = startStallProbe(ctx, db)
			nodeKillAt = time.Now()
			g.KillNode(t, galeraKilledNode)
			t.Logf("+%s: SIGKILLed Galera node %d", nodeKillAt.Sub(start).Round(time.Millisecond), galeraKilledNode)
		case nodeKilled && !nodeUp && time.Since(nodeKillAt) >= galeraNodeDown:
			t0 := time.Now()
			how := g.StartNode(t, galeraKilledNode)
			nodeBackAt, rejoin, nodeUp = time.Now(), time.Since(t0), true
			t.Logf("+%s: Galera node %d back and Synced (start, recovery and rejoin took %s)", nodeBackAt.Sub(start).Round(time.Millisecond), galeraKilledNode, rejoin.Round(time.Millisecond))
			if !strings.Contains(how, "by IST") {
				t.Errorf("Galera node %d did not rejoin by IST: %s", galeraKilledNode, how)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := time.Since(start)
	if g != nil && !nodeKilled || !appKilled {
		t.Fatalf("all %d tasks succeeded in %s before the faults: too short a run to test anything", tasks, elapsed.Round(time.Millisecond))
	}

	for node := 1; node <= nodes; node++ {
		live[node].cmd.Process.Signal(syscall.SIGTERM)
	}
	for node := 1; node <= nodes; node++ {
		p := live[node]
		select {
		case <-p.done:
			if !p.cmd.ProcessState.Success() {
				t.Errorf("worker %s did not stop cleanly: %v\n%s", p.id, p.cmd.ProcessState, tail(p.stderr, 30))
			}
		case <-time.After(30 * time.Second):
			t.Errorf("worker %s did not stop within 30s of SIGTERM", p.id)
		}
	}

	subs := readSubmits(t, dir)
	ids := subs.ids(t, tasks)
	r := check(t, db, ids, readLogs(t, dir), kills)

	// What the callers saw.
	how := "run at once by the submitting process when it has a free worker"
	if *flagGaleraClaimed {
		how = "each claimed by some process's poller"
	}
	writers := "every process writes through its own node"
	if *flagGaleraWriters == "one" {
		writers = "every process writes through the node the failover connector elects"
		if !*flagGaleraFailover {
			writers = fmt.Sprintf("every process writes through node %d", testdb.SteadyNode)
		}
	}
	if *flagGaleraFailover {
		writers += ", then the next node of its DSN's list when that one fails"
	} else {
		writers += " only"
	}
	if g == nil {
		writers = "every process writes to one MariaDB server, no node is killed (a comparison run)"
	}
	t.Logf("galera chaos: %s; lease %s, heartbeat %s, instance timeout %s", writers, *flagGaleraLease, galeraHeartbeat, *flagGaleraInstance)
	t.Logf("galera chaos: %d tasks (20%% failing once; first attempts %s), %d processes × %d workers, one per node; %s, %.0f tasks/s (%.0f tasks/s before the first fault)",
		tasks, how, nodes, galeraWorkerThreads, elapsed.Round(time.Millisecond), float64(tasks)/elapsed.Seconds(),
		float64(succeededAtFirstFault)/firstFault.Sub(start).Seconds())
	if g != nil {
		stall := probe.stop()
		killStall, killFailed := stall.longest(nodeKillAt, nodeKillAt.Add(galeraNodeDown))
		rejoinStall, rejoinFailed := stall.longest(nodeBackAt.Add(-rejoin), time.Now())
		t.Logf("galera chaos: node %d down %s from +%s, rejoined (recovery, IST, Synced) in %s; longest write through node %d (one every %s): %s after the kill (%d failed), %s during and after the rejoin (%d failed)",
			galeraKilledNode, nodeBackAt.Sub(nodeKillAt).Round(time.Millisecond), nodeKillAt.Sub(start).Round(time.Millisecond), rejoin.Round(time.Millisecond),
			testdb.SteadyNode, probeEvery, killStall.Round(time.Millisecond), killFailed, rejoinStall.Round(time.Millisecond), rejoinFailed)
	}
	for node := 1; node <= nodes; node++ {
		var errs []string
		total := 0
		for _, kind := range []string{"not-persisted", "outcome-unknown", "other"} {
			if n := subs.errors[node][kind]; n > 0 {
				errs = append(errs, fmt.Sprintf("%d %s", n, kind))
				total += n
			}
		}
		gap := subs.longestGap(node)
		what := ""
		switch {
		case g != nil && node == galeraKilledNode:
			what = " (its node was killed)"
		case node == galeraKilledApp:
			what = " (killed and restarted once)"
		}
		when := ""
		if g != nil {
			when = fmt.Sprintf(", from +%s after the node kill", gap.from.Sub(nodeKillAt).Round(time.Millisecond))
		}
		t.Logf("galera chaos: process of node %d%s: %d submits failed [%s]; longest time without a successful submit %s%s",
			node, what, total, strings.Join(errs, ", "), gap.length.Round(time.Millisecond), when)
	}
	rescued := 0
	for _, v := range r.rescued {
		rescued += len(v)
	}
	t.Logf("galera chaos: %d attempts started, %d rescued after their lease expired (%d of instances not killed)", r.started, rescued, r.liveRescues)
	if g == nil {
		return
	}
	conflicts.Sample()
	per := func(n int64) float64 { return float64(n) * 10000 / float64(tasks) }
	t.Logf("galera chaos: conflicts: %d brute-force aborts, %d certification failures (%.0f and %.0f per 10,000 tasks)",
		conflicts.BFAborts, conflicts.CertFailures, per(conflicts.BFAborts), per(conflicts.CertFailures))
}

// submitDone reports whether p's submit log ends its share ("done").
func submitDone(p *galeraProc) bool {
	b, err := os.ReadFile(p.submitLog)
	if err != nil {
		return false
	}
	return strings.HasSuffix(string(b), " 0 0 done\n")
}

// submitRecord is one task a worker submitted.
type submitRecord struct {
	id          int64
	n           int
	first, done time.Time // first try began, the try that persisted it returned
}

// submits is what the workers' submit logs say.
type submits struct {
	byNode map[int][][]submitRecord // node → per incarnation, in log order
	errors map[int]map[string]int   // node → error kind → count
}

// readSubmits parses every worker's submit log in dir (w<node>.<gen>.submits).
func readSubmits(t *testing.T, dir string) *submits {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.submits"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no submit logs in %s: %v", dir, err)
	}
	slices.Sort(files)
	s := &submits{byNode: map[int][][]submitRecord{}, errors: map[int]map[string]int{}}
	for _, name := range files {
		var node, gen int
		if _, err := fmt.Sscanf(filepath.Base(name), "w%d.%d.submits", &node, &gen); err != nil {
			t.Fatalf("%s: not a worker's submit log", name)
		}
		if s.errors[node] == nil {
			s.errors[node] = map[string]int{}
		}
		var recs []submitRecord
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 5 {
				continue // cut short by a kill
			}
			ms, err1 := strconv.ParseInt(fields[0], 10, 64)
			id, err2 := strconv.ParseInt(fields[2], 10, 64)
			n, err3 := strconv.Atoi(fields[3])
			if err1 != nil || err2 != nil || err3 != nil {
				t.Fatalf("%s: bad line %q", name, sc.Text())
			}
			switch fields[4] {
			case "submitted", "duplicate":
				if len(fields) < 6 {
					continue // cut short by a kill
				}
				first, err := strconv.ParseInt(fields[5], 10, 64)
				if err != nil {
					t.Fatalf("%s: bad line %q", name, sc.Text())
				}
				recs = append(recs, submitRecord{id: id, n: n, first: time.UnixMilli(first), done: time.UnixMilli(ms)})
			case "error":
				if len(fields) >= 6 {
					s.errors[node][fields[5]]++
				}
			case "done":
			default:
				t.Fatalf("%s: bad line %q", name, sc.Text())
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		s.byNode[node] = append(s.byNode[node], recs)
	}
	return s
}

// ids maps every submitted task's id to its n, checking that each n in
// [0, tasks) was submitted and got one id only (the unique key held).
func (s *submits) ids(t *testing.T, tasks int) map[int64]int {
	t.Helper()
	ids := map[int64]int{}
	byN := map[int]int64{}
	for _, incarnations := range s.byNode {
		for _, recs := range incarnations {
			for _, r := range recs {
				if prev, ok := byN[r.n]; ok && prev != r.id {
					t.Errorf("task n=%d submitted as two tasks, ids %d and %d", r.n, prev, r.id)
				}
				byN[r.n], ids[r.id] = r.id, r.n
			}
		}
	}
	missing := 0
	for n := 0; n < tasks; n++ {
		if _, ok := byN[n]; !ok {
			if missing++; missing <= 10 {
				t.Errorf("task n=%d was never submitted successfully", n)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d tasks never submitted successfully", missing, tasks)
	}
	return ids
}

// gap is a stretch of time in which a process wanted to submit and no
// submit of its succeeded.
type gap struct {
	length   time.Duration
	from, to time.Time
}

// longestGap is node's process's longest gap, over its incarnations: for
// each successful submit, from the later of the previous success and the
// first try of this task (the process may have waited for the backlog in
// between) to this success. The wait of a process that was killed is
// not counted.
func (s *submits) longestGap(node int) gap {
	var best gap
	for _, recs := range s.byNode[node] {
		sorted := slices.Clone(recs)
		slices.SortFunc(sorted, func(a, b submitRecord) int { return a.done.Compare(b.done) })
		for i, r := range sorted {
			from := r.first
			if i > 0 && sorted[i-1].done.After(from) {
				from = sorted[i-1].done
			}
			if d := r.done.Sub(from); d > best.length {
				best = gap{length: d, from: from, to: r.done}
			}
		}
	}
	return best
}

// stallProbe writes a row through one node every probeEvery and records
// how long each write took (or failed after): the cluster's write stalls.
type stallProbe struct {
	cancel  context.CancelFunc
	done    chan struct{}
	samples []probeWrite
}

type probeWrite struct {
	at     time.Time
	took   time.Duration
	failed bool
}

// longest is the longest write begun in [from, to), and how many failed there.
func (p *stallProbe) longest(from, to time.Time) (longest time.Duration, failed int) {
	for _, w := range p.samples {
		if w.at.Before(from) || !w.at.Before(to) {
			continue
		}
		longest = max(longest, w.took)
		if w.failed {
			failed++
		}
	}
	return longest, failed
}

const probeEvery = 20 * time.Millisecond

func startStallProbe(ctx context.Context, db *sql.DB) *stallProbe {
	ctx, cancel := context.WithCancel(ctx)
	p := &stallProbe{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			t0 := time.Now()
			wctx, wcancel := context.WithTimeout(ctx, time.Minute)
			_, err := db.ExecContext(wctx, "INSERT INTO chaos_probe (at) VALUES (?)", t0.UnixMilli())
			wcancel()
			if ctx.Err() != nil {
				return
			}
			p.samples = append(p.samples, probeWrite{at: t0, took: time.Since(t0), failed: err != nil})
			select {
			case <-ctx.Done():
			case <-time.After(probeEvery):
			}
		}
	}()
	return p
}

// stop ends the probe and returns what it saw.
func (p *stallProbe) stop() *stallProbe {
	p.cancel()
	<-p.done
	return p
}
