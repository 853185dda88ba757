package main

// The cluster workload: the same insert + work through one database server,
// through a cluster with one writer (one runtime on the server list: the
// failover connector writes through the node it elects), and through the
// cluster with every server a writer (one runtime per listed server, each
// given the list with its own server first and argoMultiWriter=true), as
// docs/deployment.md describes the two ways of running on Galera.

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/argo-retry/argo/internal/failover"
	"github.com/argo-retry/argo/runtime"
)

// clusterTaskName is the task the cluster workload submits; like every
// task argobench writes, its name starts with "argobench." (see
// checkBenchDatabase).
const clusterTaskName = "argobench.Cluster"

// Shape of the cluster workload's tasks, as in the Galera chaos test
// (internal/chaos): one task in clusterFailEvery fails its first attempt
// and is retried clusterRetryDelay later.
const (
	clusterBaseTasks  = 10_000
	clusterFailEvery  = 5 // 20% of the tasks fail once
	clusterRetryDelay = 20 * time.Millisecond
	// clusterMaxAttempts leaves room for a rescue without exhausting a task.
	clusterMaxAttempts = 5
)

// clusterOptions are the cluster workload's flags.
type clusterOptions struct {
	singleDSN string // the baseline: one server (empty: no baseline)
	claimed   bool   // submit due now, so that a poller claims every first attempt
}

// register adds the cluster workload's flags to fs.
func (c *clusterOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&c.singleDSN, "single-dsn", "", `cluster workload: a DSN of one server ("mysql:USER:PASS@tcp(HOST:PORT)/DB", a database used only for benchmarking) to run the same work on, as the baseline`)
	fs.BoolVar(&c.claimed, "clusterclaimed", true, "cluster workload: submit every task due now, so that some runtime's poller claims every first attempt (the Galera chaos test's default, the worst case for conflicts); false: the submitting runtime runs the first attempt at once when it has a free worker (Submit's default path)")
}

// errNotCluster is the cluster workload's refusal of a -dsn of one server.
var errNotCluster = errors.New(`the cluster workload needs a -dsn naming several servers of one cluster, "mysql:USER:PASS@tcp(HOST1:PORT1,HOST2:PORT2,HOST3:PORT3)/DB"`)

// serverList returns the servers a "mysql:" DSN names (host:port, in the
// order written) and its parsed config; nil for any other DSN.
func serverList(dsn string) ([]string, *mysql.Config, error) {
	if !strings.HasPrefix(dsn, "mysql:") {
		return nil, nil, nil
	}
	raw := strings.TrimPrefix(strings.TrimPrefix(dsn, "mysql:"), "//")
	cfg, err := mysql.ParseDSN(raw)
	if err == nil {
		err = failover.ParseServerList(cfg, raw)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("DSN %q: %w", runtime.RedactDSN(dsn), err)
	}
	if !strings.HasPrefix(cfg.Net, "tcp") {
		return []string{cfg.Addr}, cfg, nil
	}
	return strings.Split(cfg.Addr, ","), cfg, nil
}

// namesSeveralServers reports whether dsn is a MySQL DSN listing more than
// one server: the default run includes the cluster workload then.
func namesSeveralServers(dsn string) bool {
	servers, _, err := serverList(dsn)
	return err == nil && len(servers) > 1
}

// writerDSNs returns, for each server of the list, a DSN naming every
// server with that one first and the others after it in the list's order,
// with argoMultiWriter=true: a runtime given it writes through that server
// while it is usable (without the parameter every runtime would write
// through the one node the failover connector elects).
func writerDSNs(cfg *mysql.Config, servers []string) []string {
	out := make([]string, len(servers))
	for i := range servers {
		c := cfg.Clone()
		c.Addr = strings.Join(append(slices.Clone(servers[i:]), servers[:i]...), ",")
		c.Params = maps.Clone(c.Params)
		if c.Params == nil {
			c.Params = map[string]string{}
		}
		c.Params["argoMultiWriter"] = "true"
		out[i] = "mysql:" + c.FormatDSN()
	}
	return out
}

// nodeCounters is what one server says it counted since it started.
type nodeCounters struct {
	galera       bool  // the server reports wsrep counters
	bfAborts     int64 // wsrep_local_bf_aborts: local transactions killed by replicated ones
	certFailures int64 // wsrep_local_cert_failures: local commits refused by certification
	localCommits int64 // wsrep_local_commits: transactions committed through this server
}

// clusterNodes reads each server's counters through a connection of its
// own (not through the failover connector, which would pick one).
type clusterNodes struct {
	addrs []string
	dbs   []*sql.DB
}

func openClusterNodes(cfg *mysql.Config, servers []string) (*clusterNodes, error) {
	n := &clusterNodes{addrs: servers}
	for _, addr := range servers {
		c := cfg.Clone()
		c.Addr, c.DBName = addr, ""
		conn, err := mysql.NewConnector(c)
		if err != nil {
			n.close()
			return nil, err
		}
		db := sql.OpenDB(conn)
		db.SetMaxOpenConns(1)
		n.dbs = append(n.dbs, db)
	}
	return n, nil
}

func (n *clusterNodes) close() {
	for _, db := range n.dbs {
		db.Close()
	}
}

// clusterStatusTimeout bounds one server's status query.
const clusterStatusTimeout = 10 * time.Second

// sample reads every server's counters; every server must answer.
func (n *clusterNodes) sample(ctx context.Context) ([]nodeCounters, error) {
	out := make([]nodeCounters, len(n.dbs))
	for i, db := range n.dbs {
		qctx, cancel := context.WithTimeout(ctx, clusterStatusTimeout)
		c, err := readNodeCounters(qctx, db)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("status of server %s: %w", n.addrs[i], err)
		}
		out[i] = c
	}
	return out, nil
}

func readNodeCounters(ctx context.Context, db *sql.DB) (nodeCounters, error) {
	var c nodeCounters
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_bf_aborts', 'wsrep_local_cert_failures', 'wsrep_local_commits')")
	if err != nil {
		return c, err
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return c, err
		}
		v, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return c, fmt.Errorf("%s = %q: %w", name, value, err)
		}
		seen++
		switch strings.ToLower(name) {
		case "wsrep_local_bf_aborts":
			c.bfAborts = v
		case "wsrep_local_cert_failures":
			c.certFailures = v
		case "wsrep_local_commits":
			c.localCommits = v
		}
	}
	c.galera = seen == 3
	return c, rows.Err()
}

// clusterSetup is one of the ways the workload is run.
type clusterSetup struct {
	key    string        // single, one, all
	label  string        // as printed
	dsns   []string      // one runtime per DSN
	admin  *sql.DB       // resets and checks
	nodes  *clusterNodes // the servers whose counters are read; nil: none
	result clusterResults
	// settings: the durability of the one server (-single-dsn).
	settings string
}

// clusterResults are a setup's figures, one entry per run.
type clusterResults struct {
	rates        []float64
	bfAborts     []float64 // per 10,000 tasks
	certFailures []float64 // per 10,000 tasks
	extraRuns    []float64 // attempts beyond the expected ones (rescues)
	failed       []float64 // failed submit tries per 10,000 tasks
	localCommits []int64   // per server, summed over the runs
	galera       bool
}

// clusterRunStats is what one run measured.
type clusterRunStats struct {
	elapsed      time.Duration
	counters     []nodeCounters // deltas per server; nil when not read
	extraAttempt int
	// failedSubmits counts the submits that returned ErrNotPersisted or
	// ErrOutcomeUnknown and were tried again (submitUntilStored).
	failedSubmits int
}

// clusterAttempts records which attempts of which task ran.
type clusterAttempts struct {
	mu   sync.Mutex
	runs map[int64]*taskRuns
}

type taskRuns struct {
	n        int
	attempts []int
}

func newClusterAttempts(n int) *clusterAttempts {
	return &clusterAttempts{runs: make(map[int64]*taskRuns, n)}
}

func (l *clusterAttempts) add(id int64, attempt, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.runs[id]
	if r == nil {
		r = &taskRuns{n: n}
		l.runs[id] = r
	}
	r.attempts = append(r.attempts, attempt)
}

// check verifies that n distinct tasks ran and no (task, attempt) ran
// twice; it returns how many attempts ran beyond the expected ones (one,
// two for a task that fails once): rescued attempts, not duplicates.
func (l *clusterAttempts) check(n int) (extra int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	twice := 0
	for _, r := range l.runs {
		seen := map[int]bool{}
		for _, a := range r.attempts {
			if seen[a] {
				twice++
			}
			seen[a] = true
		}
		want := 1
		if r.n%clusterFailEvery == 0 {
			want = 2
		}
		extra += max(0, len(seen)-want)
	}
	if len(l.runs) != n || twice > 0 {
		return extra, fmt.Errorf("%d distinct tasks ran (want %d); %d (task, attempt) pairs ran more than once", len(l.runs), n, twice)
	}
	return extra, nil
}

// clusterTaskDef is the workload's task: it records each attempt in log
// and fails the first attempt of one task in clusterFailEvery.
func clusterTaskDef(log *clusterAttempts) *runtime.TaskDef {
	return &runtime.TaskDef{
		Name:   clusterTaskName,
		Policy: runtime.RetryPolicy{MaxAttempts: clusterMaxAttempts, Backoff: runtime.BackoffFixed, Initial: clusterRetryDelay, Jitter: runtime.Jitter{Kind: runtime.JitterNone}},
		Run: func(ctx context.Context, raw []byte) error {
			var a struct {
				N int `json:"n"`
			}
			if err := runtime.DecodeJSON(raw, &a, "n"); err != nil {
				return err
			}
			id, attempt, _ := runtime.AttemptFrom(ctx)
			log.add(id, attempt, a.N)
			if a.N%clusterFailEvery == 0 && attempt <= 1 {
				return errors.New("argobench: the first attempt fails")
			}
			return nil
		},
	}
}

// share splits total into parts as even as possible, at least 1 each.
func clusterShare(total, parts, i int) int {
	return max(1, total/parts+boolInt(i < total%parts))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cluster is the cluster workload.
func (b *bencher) cluster(ctx context.Context) error {
	servers, cfg, err := serverList(b.dsn)
	if err != nil {
		return err
	}
	if len(servers) < 2 {
		return errNotCluster
	}
	n := b.o.n(clusterBaseTasks, 20)
	// The runtimes' failover connectors log the server they chose to the
	// default logger: keep it as quiet as the bench's own (-v).
	defaultLogger := slog.Default()
	slog.SetDefault(b.logger)
	defer slog.SetDefault(defaultLogger)
	nodes, err := openClusterNodes(cfg, servers)
	if err != nil {
		return err
	}
	defer nodes.close()
	if _, err := nodes.sample(ctx); err != nil {
		return err
	}
	writers := writerDSNs(cfg, servers)
	var setups []*clusterSetup
	if d := b.o.cluster.singleDSN; d != "" {
		single, settings, err := b.openSingle(ctx, d)
		if err != nil {
			return fmt.Errorf("-single-dsn: %w", err)
		}
		defer single.Close()
		defer resetTables(context.Background(), single, runtime.DialectMySQL)
		setups = append(setups, &clusterSetup{key: "single", label: "one server", dsns: []string{d}, admin: single, settings: settings})
	}
	setups = append(setups,
		&clusterSetup{key: "one", label: "cluster, one writer", dsns: []string{"mysql:" + cfg.FormatDSN()}, admin: b.admin, nodes: nodes},
		&clusterSetup{key: "all", label: "cluster, all writers", dsns: writers, admin: b.admin, nodes: nodes})

	for r := range b.o.runs {
		// Rotate the order from run to run, so that no setup always runs
		// first (or last, on a warmer cluster).
		for i := range setups {
			s := setups[(i+r)%len(setups)]
			rctx, cancel := context.WithTimeout(ctx, b.o.timeout)
			st, err := b.clusterRun(rctx, s, n)
			cancel()
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", s.label, r+1, err)
			}
			b.logf("cluster: %s run %d/%d: %d tasks in %s", s.key, r+1, b.o.runs, n, st.elapsed.Round(time.Millisecond))
			s.record(st, n)
		}
	}
	b.reportCluster(setups, n, len(servers))
	for _, s := range setups {
		sr := &ClusterSetupReport{Setup: s.key, Label: s.label, LocalCommits: s.result.localCommits}
		for _, d := range s.dsns {
			sr.DSNs = append(sr.DSNs, runtime.RedactDSN(d))
		}
		if s.nodes != nil && s.result.galera {
			sr.Servers = s.nodes.addrs
		}
		b.rep.Cluster = append(b.rep.Cluster, sr)
	}
	return nil
}

// openSingle prepares the baseline's database as bench prepares -dsn's.
// It returns the database and the server's durability setting.
func (b *bencher) openSingle(ctx context.Context, dsn string) (*sql.DB, string, error) {
	if !strings.HasPrefix(dsn, "mysql:") {
		return nil, "", fmt.Errorf("want a MySQL DSN of one server, mysql:USER:PASS@tcp(HOST:PORT)/DB")
	}
	if namesSeveralServers(dsn) {
		return nil, "", fmt.Errorf("%s names several servers: give one server, the baseline the cluster is compared with", runtime.RedactDSN(dsn))
	}
	if err := ensureMySQLDatabase(ctx, dsn); err != nil {
		return nil, "", fmt.Errorf("creating the database: %w", err)
	}
	db, dialect, err := runtime.OpenDB(dsn)
	if err != nil {
		return nil, "", err
	}
	ok := false
	defer func() {
		if !ok {
			db.Close()
		}
	}()
	if _, err := runtime.Migrate(ctx, db, dialect); err != nil {
		return nil, "", err
	}
	if !b.o.force {
		if err := checkBenchDatabase(ctx, db); err != nil {
			return nil, "", err
		}
	}
	if err := runtime.NewInspector(db, dialect).CheckSchema(ctx); err != nil {
		b.logf("the argo tables of -single-dsn are out of date (%v); recreating them", err)
		if err := dropArgoTables(ctx, db); err != nil {
			return nil, "", err
		}
		if _, err := runtime.Migrate(ctx, db, dialect); err != nil {
			return nil, "", err
		}
	}
	var flush string
	if err := db.QueryRowContext(ctx, "SELECT @@innodb_flush_log_at_trx_commit").Scan(&flush); err != nil {
		return nil, "", err
	}
	ok = true
	return db, "innodb_flush_log_at_trx_commit=" + flush, nil
}

// clusterRun submits n tasks through the setup's runtimes (each submits
// its share from its share of the submitting goroutines, and works
// whatever its poller claims) and returns the time from the first submit
// to the n-th success, with the servers' counters over the run.
func (b *bencher) clusterRun(ctx context.Context, s *clusterSetup, n int) (clusterRunStats, error) {
	var st clusterRunStats
	if err := resetTables(ctx, s.admin, runtime.DialectMySQL); err != nil {
		return st, err
	}
	var before []nodeCounters
	if s.nodes != nil {
		var err error
		if before, err = s.nodes.sample(ctx); err != nil {
			return st, err
		}
	}
	log := newClusterAttempts(n)
	def := clusterTaskDef(log)
	obs := newDoneObserver(clusterTaskName, n)
	k := len(s.dsns)
	rts := make([]*runtime.Runtime, 0, k)
	defer func() { stopAll(rts) }()
	for i, dsn := range s.dsns {
		rt, err := runtime.Start(ctx, runtime.Config{
			DSN: dsn, AutoMigrate: true, Logger: b.logger, Observer: obs,
			Workers:    clusterShare(b.o.workers, k, i),
			InstanceID: fmt.Sprintf("argobench-%s-%d-%d", s.key, i+1, os.Getpid()),
		})
		if err != nil {
			return st, fmt.Errorf("runtime %d: %w", i+1, err)
		}
		rts = append(rts, rt)
		if err := rt.Register(def); err != nil {
			return st, err
		}
	}

	t0 := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Int64
	errs := make([]error, k)
	from := 0
	for i, rt := range rts {
		count := n/k + boolInt(i < n%k)
		first := from
		from += count
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = parallel(ctx, clusterShare(b.o.submitters, k, i), count, func(j int) error {
				return submitUntilStored(ctx, rt, def, first+j, b.o.cluster.claimed, &failed)
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return st, fmt.Errorf("submitting: %w", err)
	}
	if err := obs.wait(ctx); err != nil {
		return st, err
	}
	st.elapsed = time.Duration(obs.at.Load() - t0.UnixNano())
	st.failedSubmits = int(failed.Load())
	stopAll(rts) // every attempt has ended: what ran is all in the log
	rts = nil
	extra, err := log.check(n)
	if err != nil {
		return st, err
	}
	st.extraAttempt = extra
	got, err := countWhere(ctx, s.admin, "task_id = ? AND task_status = ?", clusterTaskName, stateSucceeded)
	if err != nil {
		return st, err
	}
	if got != n {
		return st, fmt.Errorf("%d %s rows succeeded, want %d", got, clusterTaskName, n)
	}
	if s.nodes != nil {
		after, err := s.nodes.sample(ctx)
		if err != nil {
			return st, err
		}
		for i := range after {
			if after[i].bfAborts < before[i].bfAborts || after[i].localCommits < before[i].localCommits {
				return st, fmt.Errorf("server %s restarted during the run (its counters went down): run again", s.nodes.addrs[i])
			}
			st.counters = append(st.counters, nodeCounters{
				galera:       after[i].galera,
				bfAborts:     after[i].bfAborts - before[i].bfAborts,
				certFailures: after[i].certFailures - before[i].certFailures,
				localCommits: after[i].localCommits - before[i].localCommits,
			})
		}
	}
	return st, nil
}

// clusterSubmitPause is how long a caller waits before trying a failed
// submit again.
const clusterSubmitPause = 10 * time.Millisecond

// submitUntilStored submits task n as a caller that must not lose it
// would: with UniqueKey n, trying again after ErrNotPersisted (the row
// certainly did not land: on Galera, a submit whose every try the cluster
// aborted as a conflict) or ErrOutcomeUnknown (the key keeps a second try
// from storing it twice), counting each failed try in failed.
func submitUntilStored(ctx context.Context, rt *runtime.Runtime, def *runtime.TaskDef, n int, claimed bool, failed *atomic.Int64) error {
	call := runtime.Call{Task: def, Args: argsJSON(n), UniqueKey: strconv.Itoa(n)}
	for {
		if claimed {
			call.RunAt = time.Now()
		}
		_, err := rt.Submit(ctx, call)
		switch {
		case err == nil, errors.Is(err, runtime.ErrDuplicate): // with its id, or ErrDuplicateIDUnknown: stored either way
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("task %d: %w (last try: %v)", n, ctx.Err(), err)
		case !errors.Is(err, runtime.ErrNotPersisted) && !errors.Is(err, runtime.ErrOutcomeUnknown):
			return err
		}
		failed.Add(1)
		select {
		case <-ctx.Done():
		case <-time.After(clusterSubmitPause):
		}
	}
}

// stopAll stops runtimes at once.
func stopAll(rts []*runtime.Runtime) {
	var wg sync.WaitGroup
	for _, rt := range rts {
		wg.Add(1)
		go func() { defer wg.Done(); stopArgo(rt) }()
	}
	wg.Wait()
}

// ClusterSetupReport is one setup of the cluster workload in the JSON
// report.
type ClusterSetupReport struct {
	Setup string   `json:"setup"` // single, one (one writer), all (all writers)
	Label string   `json:"label"`
	DSNs  []string `json:"dsns"` // one runtime per DSN, passwords hidden
	// Servers and LocalCommits: the transactions each server committed
	// for its own clients over the runs (wsrep_local_commits deltas; the
	// server's every client, not only argobench's); empty off Galera.
	Servers      []string `json:"servers,omitempty"`
	LocalCommits []int64  `json:"local_commits,omitempty"`
}

// record adds one run's figures.
func (s *clusterSetup) record(st clusterRunStats, n int) {
	r := &s.result
	r.rates = append(r.rates, float64(n)/secs(st.elapsed))
	r.extraRuns = append(r.extraRuns, float64(st.extraAttempt))
	r.failed = append(r.failed, float64(st.failedSubmits)*10_000/float64(n))
	if st.counters == nil {
		return
	}
	var bf, cert int64
	r.galera = true
	if r.localCommits == nil {
		r.localCommits = make([]int64, len(st.counters))
	}
	for i, c := range st.counters {
		r.galera = r.galera && c.galera
		bf += c.bfAborts
		cert += c.certFailures
		r.localCommits[i] += c.localCommits
	}
	per := 10_000 / float64(n)
	r.bfAborts = append(r.bfAborts, float64(bf)*per)
	r.certFailures = append(r.certFailures, float64(cert)*per)
}

// commitShares prints each server's share of the local commits.
func (r *clusterResults) commitShares() string {
	var total int64
	for _, c := range r.localCommits {
		total += c
	}
	if total == 0 {
		return ""
	}
	parts := make([]string, len(r.localCommits))
	for i, c := range r.localCommits {
		parts[i] = fmt.Sprintf("%.0f%%", 100*float64(c)/float64(total))
	}
	return "commits by server " + strings.Join(parts, "/")
}

// ratioStat is a/b run by run (the runs of two setups pair up by index).
func ratioStat(a, b []float64) *Stat {
	var out []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return newStat(out)
}

const clusterWorkload = "cluster"

func (b *bencher) reportCluster(setups []*clusterSetup, n, servers int) {
	by := map[string]*clusterSetup{}
	for _, s := range setups {
		by[s.key] = s
		note := "1 runtime"
		switch s.key {
		case "one":
			note = "1 runtime on the server list; " + s.result.commitShares()
		case "all":
			note = fmt.Sprintf("%d runtimes, each its own server first; %s", len(s.dsns), s.result.commitShares())
		}
		if extra := newStat(s.result.extraRuns); extra != nil && extra.Max > 0 {
			note = strings.TrimPrefix(note+fmt.Sprintf("; %.0f attempts rescued (median)", extra.Median), "; ")
		}
		b.rep.add(&Row{Workload: clusterWorkload, Metric: fmt.Sprintf("tasks/s, %s", s.label), Unit: UnitRate, Argo: newStat(s.result.rates), Note: note})
	}
	ratio := func(metric, a, c string) {
		if by[a] != nil && by[c] != nil {
			b.rep.add(&Row{Workload: clusterWorkload, Metric: metric, Unit: UnitRatio, Argo: ratioStat(by[a].result.rates, by[c].result.rates)})
		}
	}
	ratio("throughput, one writer / one server", "one", "single")
	ratio("throughput, all writers / one server", "all", "single")
	ratio("throughput, all writers / one writer", "all", "one")
	for _, key := range []string{"one", "all"} {
		s := by[key]
		if !s.result.galera {
			continue
		}
		name := map[string]string{"one": "one writer", "all": "all writers"}[key]
		b.rep.add(&Row{Workload: clusterWorkload, Metric: name + ": brute-force aborts per 10,000 tasks", Unit: UnitCount, Argo: newStat(s.result.bfAborts), Note: "wsrep_local_bf_aborts, all servers"})
		b.rep.add(&Row{Workload: clusterWorkload, Metric: name + ": certification failures per 10,000 tasks", Unit: UnitCount, Argo: newStat(s.result.certFailures), Note: "wsrep_local_cert_failures, all servers"})
	}
	for _, s := range setups {
		b.rep.add(&Row{Workload: clusterWorkload, Metric: "failed submits per 10,000 tasks, " + strings.TrimPrefix(s.label, "cluster, "), Unit: UnitCount, Argo: newStat(s.result.failed),
			Note: "ErrNotPersisted/ErrOutcomeUnknown, tried again by the caller (same UniqueKey)"})
	}
	if !by["one"].result.galera {
		b.rep.Notes = append(b.rep.Notes, "cluster: the servers report no wsrep counters (not Galera): no conflict figures")
	}
	how := "every first attempt claimed by a poller (-clusterclaimed)"
	if !b.o.cluster.claimed {
		how = "first attempts run at once by the submitting runtime (-clusterclaimed=false)"
	}
	single := "no -single-dsn baseline"
	if d := b.o.cluster.singleDSN; d != "" {
		single = "one server: " + runtime.RedactDSN(d) + " (" + by["single"].settings + ")"
	}
	b.rep.Notes = append(b.rep.Notes, fmt.Sprintf("cluster: %d tasks per run (1 in %d fails its first attempt, retried %s later), %s; %d workers and %d submitting goroutines in total, split over the runtimes; %d servers listed; %s",
		n, clusterFailEvery, clusterRetryDelay, how, b.o.workers, b.o.submitters, servers, single))
}
