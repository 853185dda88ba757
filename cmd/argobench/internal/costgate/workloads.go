package costgate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/argo-retry/argo/runtime"
)

// A Workload is one kind of unit of work, repeated n times one after the
// other on a runtime with one worker; the counts are per unit.
type Workload struct {
	Name string
	// Unit says what one unit is, for the table.
	Unit string
	run  func(ctx context.Context, e *env) error
	// timed are statement kinds whose number depends on timing, not on
	// the code (a watcher polling until another goroutine's commit lands):
	// reported under Kinds, left out of Statements and Trips (each is a
	// trip of its own).
	timed []string
}

// Workloads are the units the gate counts, the plain ones first, then one
// per feature (each feature used by a task of its own).
var Workloads = []Workload{
	{Name: "submit", Unit: "submit of a call scheduled 1h ahead (the INSERT alone)", run: func(ctx context.Context, e *env) error {
		_, err := e.rt.Submit(ctx, runtime.Call{Task: e.defs.later, Args: e.args()})
		return err
	}},
	{Name: "async", Unit: "plain async task: submit, claim (or run at once), finish", run: func(ctx context.Context, e *env) error {
		return e.submitAndWait(ctx, runtime.Call{Task: e.defs.work, Args: e.args()}, 1)
	}},
	{Name: "claimed", Unit: "plain async task taken by the poller's claim (submitted due a second ago, as queued work is when the workers are busy), run, finished", run: func(ctx context.Context, e *env) error {
		return e.submitAndWait(ctx, runtime.Call{Task: e.defs.work, Args: e.args(), RunAt: time.Now().Add(-time.Second)}, 1)
	}},
	{Name: "sync", Unit: "sync call: persist, run in the caller, record", run: func(ctx context.Context, e *env) error {
		_, err := e.rt.Submit(ctx, runtime.Call{Task: e.defs.sync, Args: e.args()})
		return err
	}},
	{Name: "retry", Unit: "task failing once, then succeeding (2 attempts)", run: func(ctx context.Context, e *env) error {
		return e.submitAndWait(ctx, runtime.Call{Task: e.defs.failOnce, Args: e.args()}, 1)
	}},
	{Name: "after", Unit: "upstream task (claimed) + a task submitted After it while it runs", run: func(ctx context.Context, e *env) error {
		gate := make(chan struct{})
		started := make(chan struct{}, 1)
		e.hold.Store(&gate, started)
		base := e.done.total()
		// The upstream goes through the claim (RunAt a second ago: due
		// beyond doubt on the database's clock, so not held as a scheduled
		// call about to fall due): a task run at once
		// by its submit does not wake the poller when it ends, and its
		// released dependent would wait for the next poll (an hour here).
		up, err := e.rt.Submit(ctx, runtime.Call{Task: e.defs.holding, Args: e.args(), RunAt: time.Now().Add(-time.Second)})
		if err != nil {
			return err
		}
		// The dependent is submitted once the upstream runs, claimed
		// without downstream tasks: its finish then finds the edge added
		// since (has_downstream, docs/dependencies.md) every time, not as
		// the race between the claim and this submit falls.
		select {
		case <-started:
		case <-ctx.Done():
			return ctx.Err()
		}
		if _, err := e.rt.Submit(ctx, runtime.Call{Task: e.defs.work, Args: e.args(), After: []int64{up}}); err != nil {
			return err
		}
		close(gate)
		if err := e.done.wait(ctx, base+1); err != nil {
			return err
		}
		// On MySQL the upstream's finish is written after its worker is
		// freed (and the poller woken): the dependent it releases waits
		// for the next poll. Wake the poller once the finish is in (a
		// Register wakes it and sends nothing), as that poll would.
		if err := e.quiet(ctx, 20*time.Millisecond); err != nil {
			return err
		}
		e.pokes++
		if err := e.rt.Register(&runtime.TaskDef{Name: "cost.Poke" + strconv.Itoa(e.pokes), Run: func(context.Context, []byte) error { return nil }}); err != nil {
			return err
		}
		return e.done.wait(ctx, base+2)
	}},
	{Name: "orderkey", Unit: "task with an order key (its predecessor ended)", run: func(ctx context.Context, e *env) error {
		return e.submitAndWait(ctx, runtime.Call{Task: e.defs.work, Args: e.args(), OrderKey: "cost-key"}, 1)
	}},
	{Name: "flowcap", Unit: "task under a concurrency cap (limit=1000)", run: func(ctx context.Context, e *env) error {
		return e.submitAndWait(ctx, runtime.Call{Task: e.defs.capped, Args: e.args()}, 1)
	}},
	{Name: "retryafter", Unit: "task deferred once by RetryAfter(err, 20ms), then succeeding", run: func(ctx context.Context, e *env) error {
		return e.submitAndWait(ctx, runtime.Call{Task: e.defs.deferOnce, Args: e.args()}, 1)
	}},
	{Name: "uniquekey", Unit: "plain async task with a UniqueKey (a new key each unit)", run: func(ctx context.Context, e *env) error {
		args := e.args()
		return e.submitAndWait(ctx, runtime.Call{Task: e.defs.work, Args: args, UniqueKey: "cost-" + string(args)}, 1)
	}},
	{Name: "tenant", Unit: "plain async task with a Tenant", run: func(ctx context.Context, e *env) error {
		return e.submitAndWait(ctx, runtime.Call{Task: e.defs.work, Args: e.args(), Tenant: "cost-tenant"}, 1)
	}},
	{Name: "cancel", Unit: "submit of a call scheduled 1h ahead, then Inspector.Cancel of it", run: func(ctx context.Context, e *env) error {
		id, err := e.rt.Submit(ctx, runtime.Call{Task: e.defs.later, Args: e.args()})
		if err != nil {
			return err
		}
		_, err = e.rt.Inspector().Cancel(ctx, id, "costgate: cancel workload")
		return err
	}},
	{Name: "outbox", Unit: "DurableTx: BEGIN, submit in the caller's transaction, COMMIT, run", run: func(ctx context.Context, e *env) error {
		base := e.done.total()
		tx, err := e.userDB.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := e.rt.SubmitTx(ctx, tx, runtime.Call{Task: e.defs.work, Args: e.args()}); err != nil {
			_ = tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		return e.done.wait(ctx, base+1)
	}},
}

func init() {
	for i := range Workloads {
		if Workloads[i].Name == "outbox" {
			// The commit watcher (runtime/submit.go, watchCommit) reads
			// the row at 1, 2, 4 … 50 ms until the caller's COMMIT shows
			// it: how many reads depends on how soon the COMMIT lands.
			Workloads[i].timed = []string{"SELECT argo_task"}
		}
	}
}

// defs are the tasks of one runtime.
type defs struct {
	work, later, sync, failOnce, deferOnce, capped, holding *runtime.TaskDef
}

func newDefs(e *env) defs {
	pol := runtime.RetryPolicy{MaxAttempts: 3, Backoff: runtime.BackoffFixed, Initial: 20 * time.Millisecond, Multiplier: 1, MaxDelay: time.Second, Jitter: runtime.Jitter{Kind: runtime.JitterNone}}
	def := func(name string, run func(ctx context.Context, args []byte) error) *runtime.TaskDef {
		return &runtime.TaskDef{Name: "cost." + name, MethodName: name, Signature: "func " + name + "(ctx context.Context, n int) error",
			ParameterTypes: "int", Mode: runtime.Immediate, Thread: runtime.Async, Policy: pol, Run: run}
	}
	ok := func(context.Context, []byte) error { return nil }
	d := defs{
		work: def("Work", ok),
		failOnce: def("FailOnce", func(ctx context.Context, _ []byte) error {
			if _, attempt, _ := runtime.AttemptFrom(ctx); attempt <= 1 {
				return errors.New("costgate: first attempt fails")
			}
			return nil
		}),
		deferOnce: def("DeferOnce", func(ctx context.Context, _ []byte) error {
			// A deferral does not use up an attempt: the attempt number
			// stays 1, so the first run is told by the task id.
			if id, _, _ := runtime.AttemptFrom(ctx); !e.deferred(id) {
				return runtime.RetryAfter(errors.New("costgate: busy"), 20*time.Millisecond)
			}
			return nil
		}),
		capped: def("Capped", ok),
		holding: def("Holding", func(ctx context.Context, _ []byte) error {
			if g, started := e.hold.Load(); g != nil {
				select {
				case started <- struct{}{}:
				default:
				}
				select {
				case <-*g:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		}),
	}
	d.later = def("Later", ok)
	d.later.Mode, d.later.Delay = runtime.Scheduled, time.Hour
	d.sync = def("Sync", ok)
	d.sync.Thread = runtime.Sync
	d.capped.Flow = &runtime.FlowControl{Group: "cost.capped", Limit: 1000}
	return d
}

// env is one runtime with its counter.
type env struct {
	rt     *runtime.Runtime
	userDB *sql.DB // the application's handle (for the outbox's transaction)
	c      *Counter
	defs   defs
	done   *doneObserver
	hold   holdGate
	n      int
	mu     sync.Mutex
	seen   map[int64]bool
	pokes  int
}

// deferred reports whether task id was deferred already, marking it.
func (e *env) deferred(id int64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seen == nil {
		e.seen = map[int64]bool{}
	}
	was := e.seen[id]
	e.seen[id] = true
	return was
}

// holdGate is the gate the holding task waits on, and where it says that
// it started.
type holdGate struct {
	mu      sync.Mutex
	g       *chan struct{}
	started chan struct{}
}

func (h *holdGate) Store(g *chan struct{}, started chan struct{}) {
	h.mu.Lock()
	h.g, h.started = g, started
	h.mu.Unlock()
}

func (h *holdGate) Load() (*chan struct{}, chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.g, h.started
}

func (e *env) args() []byte {
	e.n++
	return []byte(`{"n":` + strconv.Itoa(e.n) + `}`)
}

func (e *env) submitAndWait(ctx context.Context, c runtime.Call, tasks int) error {
	base := e.done.total()
	if _, err := e.rt.Submit(ctx, c); err != nil {
		return err
	}
	return e.done.wait(ctx, base+tasks)
}

// quiet waits until the counter has seen no request for settle (the
// runtime's follow-up work of a unit — a poke's claim — is part of the
// unit), up to a deadline.
func (e *env) quiet(ctx context.Context, settle time.Duration) error {
	deadline := time.Now().Add(10 * time.Second)
	last := e.c.Snapshot().Trips
	for {
		t := time.NewTimer(settle)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		now := e.c.Snapshot().Trips
		if now == last {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("costgate: the runtime never went quiet (%d requests in the last %v)", now-last, settle)
		}
		last = now
	}
}

// doneObserver counts tasks that ended succeeded.
type doneObserver struct {
	mu   sync.Mutex
	n    int
	cond chan struct{}
}

func newDoneObserver() *doneObserver { return &doneObserver{cond: make(chan struct{})} }

func (d *doneObserver) Finished(_ string, st runtime.State) {
	if st != runtime.StateSucceeded {
		return
	}
	d.mu.Lock()
	d.n++
	close(d.cond)
	d.cond = make(chan struct{})
	d.mu.Unlock()
}

func (d *doneObserver) total() int { d.mu.Lock(); defer d.mu.Unlock(); return d.n }

func (d *doneObserver) wait(ctx context.Context, target int) error {
	for {
		d.mu.Lock()
		n, ch := d.n, d.cond
		d.mu.Unlock()
		if n >= target {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("costgate: %d of %d tasks succeeded: %w", n, target, ctx.Err())
		}
	}
}

func (d *doneObserver) Submitted(string)                                                 {}
func (d *doneObserver) AttemptDone(string, string, string, time.Duration, time.Duration) {}
func (d *doneObserver) AlertFired(string)                                                {}
func (d *doneObserver) LeaseRescued(string)                                              {}
func (d *doneObserver) ClaimError(error)                                                 {}

// Engine is where a workload runs.
type Engine struct {
	Name string
	// open returns the runtime's Config (DB or DSN) and the application's
	// handle, both counting into c.
	open func(c *Counter) (runtime.Config, *sql.DB, error)
}

// once returns f's first result ever after: an engine's workloads share
// one database (migrated once); each has a runtime of its own.
func once(f func() string) func() string {
	var o sync.Once
	var v string
	return func() string {
		o.Do(func() { v = f() })
		return v
	}
}

// SQLiteEngine runs on a new SQLite file of dsn.
func SQLiteEngine(newDSN func() string) Engine {
	newDSN = once(newDSN)
	return Engine{Name: "sqlite", open: func(c *Counter) (runtime.Config, *sql.DB, error) {
		db, err := OpenSQLite(newDSN(), c)
		if err != nil {
			return runtime.Config{}, nil, err
		}
		return runtime.Config{DB: db, Dialect: runtime.DialectSQLite}, db, nil
	}}
}

// MySQLOneTripEngine runs on a new database (newDSN: a go-sql-driver DSN)
// through runtime.OpenDB, as an application passing a DSN does: finishes
// go in one multi-statement round trip.
func MySQLOneTripEngine(newDSN func() string) Engine {
	newDSN = once(newDSN)
	return Engine{Name: "mysql-onetrip", open: func(c *Counter) (runtime.Config, *sql.DB, error) {
		dsn, err := WireDSN(newDSN(), c)
		if err != nil {
			return runtime.Config{}, nil, err
		}
		user, _, err := runtime.OpenDB("mysql:" + dsn)
		if err != nil {
			return runtime.Config{}, nil, err
		}
		return runtime.Config{DSN: "mysql:" + dsn}, user, nil
	}}
}

// MySQLTxEngine runs on a new database through a handle the application
// opened itself (Config.DB): argo has no multi-statement pool there, so
// every write batch is a transaction.
func MySQLTxEngine(newDSN func() string) Engine {
	newDSN = once(newDSN)
	return Engine{Name: "mysql-tx", open: func(c *Counter) (runtime.Config, *sql.DB, error) {
		dsn, err := WireDSN(newDSN(), c)
		if err != nil {
			return runtime.Config{}, nil, err
		}
		mc, err := mysql.ParseDSN(dsn)
		if err != nil {
			return runtime.Config{}, nil, err
		}
		mc.InterpolateParams = true // as runtime.OpenDB sets it
		db, err := sql.Open("mysql", mc.FormatDSN())
		if err != nil {
			return runtime.Config{}, nil, err
		}
		return runtime.Config{DB: db, Dialect: runtime.DialectMySQL}, db, nil
	}}
}

// Windows is how many windows of n units Measure counts; each count is
// the least of the windows' per-unit means. Timing only adds work to a
// window — two pokes of the poller that did not coalesce make one more poll
// (a claim that finds nothing, a read of the scheduled calls to hold) —
// while the code's own statements are in every unit of every window: the
// least is the code's cost, the same run after run. (Counting each unit on
// its own is not better: a unit's last statement can land after the quiet
// spell that ends it, in the next unit; within a window that cancels out.)
// The statement kinds are the first window's.
const Windows = 3

// Measure runs Windows windows of n units of w on eng's database, after
// one unit of warm-up, on a runtime of its own, and returns the counts per
// unit (the least of the windows).
func Measure(ctx context.Context, eng Engine, w Workload, n int) (PerUnit, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c := NewCounter()
	cfg, userDB, err := eng.open(c)
	var logging atomic.Bool // the warm-up is not logged
	if err != nil {
		return PerUnit{}, err
	}
	defer userDB.Close()
	done := newDoneObserver()
	e := &env{userDB: userDB, c: c, done: done}
	// One worker, nothing periodic within the run: the counts are those of
	// the units, the same every run.
	cfg.AutoMigrate = true
	cfg.Workers = 1
	cfg.PollInterval = time.Hour
	cfg.HeartbeatInterval = time.Hour
	cfg.RescueInterval = time.Hour
	cfg.MaintenanceInterval = time.Hour
	cfg.Observer = done
	cfg.Logger = slog.New(slog.DiscardHandler)
	rt, err := runtime.Start(ctx, cfg)
	if err != nil {
		return PerUnit{}, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = rt.Stop(sctx)
	}()
	e.rt = rt
	e.defs = newDefs(e)
	d := e.defs
	if err := rt.Register(d.work, d.later, d.sync, d.failOnce, d.deferOnce, d.capped, d.holding); err != nil {
		return PerUnit{}, err
	}
	const settle = 20 * time.Millisecond
	if err := w.run(ctx, e); err != nil { // warm-up: connections, caches
		return PerUnit{}, fmt.Errorf("%s: warm-up: %w", w.Name, err)
	}
	if err := e.quiet(ctx, settle); err != nil {
		return PerUnit{}, err
	}
	if StatementLog != nil {
		c.mu.Lock()
		c.Log = func(kind, text string) {
			if logging.Load() {
				StatementLog(eng.Name, w.Name, kind, text)
			}
		}
		c.mu.Unlock()
	}
	logging.Store(true)
	var wins []PerUnit
	for range Windows {
		before := c.Snapshot()
		for i := range n {
			if err := w.run(ctx, e); err != nil {
				return PerUnit{}, fmt.Errorf("%s: unit %d: %w", w.Name, i, err)
			}
			if err := e.quiet(ctx, settle); err != nil {
				return PerUnit{}, err
			}
		}
		counts := c.Snapshot().Sub(before)
		for _, k := range w.timed {
			counts.Statements -= counts.Kinds[k]
			counts.Trips -= counts.Kinds[k]
		}
		wins = append(wins, perUnit(counts, n))
	}
	p := wins[0]
	for _, q := range wins[1:] {
		p.Statements, p.Trips, p.Commits = min(p.Statements, q.Statements), min(p.Trips, q.Trips), min(p.Commits, q.Commits)
	}
	return p, nil
}

// StatementLog, if set, receives each statement the measured units send
// (not the warm-up's), with its engine and workload: the test's -logsql.
var StatementLog func(engine, workload, kind, text string)

// PerUnit is Counts divided by the units.
type PerUnit struct {
	Statements float64            `json:"statements"`
	Trips      float64            `json:"trips"`
	Commits    float64            `json:"commits"`
	Kinds      map[string]float64 `json:"kinds,omitempty"`
}

func perUnit(c Counts, n int) PerUnit {
	r := func(v int64) float64 { return float64(int64(float64(v)/float64(n)*100+0.5)) / 100 }
	p := PerUnit{Statements: r(c.Statements), Trips: r(c.Trips), Commits: r(c.Commits), Kinds: map[string]float64{}}
	for k, v := range c.Kinds {
		p.Kinds[k] = r(v)
	}
	return p
}
