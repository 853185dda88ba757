package runtime

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/argo-retry/argo/internal/maintenance"
	"github.com/argo-retry/argo/internal/storage"
)

// Runtime persists, claims and runs tasks. It is safe for concurrent use.
type Runtime struct {
	cfg    Config
	store  *storage.Store
	log    *slog.Logger
	alerts *alerter
	ownDB  bool // the runtime opened the handle and closes it at Stop

	// The background services (services.go, internal/maintenance).
	completer   *maintenance.Completer // batches finish writes of concurrent attempts
	holds       *maintenance.HeldRetries[*TaskDef]
	heartbeater *maintenance.Heartbeater
	elector     *maintenance.Elector // the maintenance role
	rescuer     *maintenance.Rescuer
	flagger     *maintenance.OrphanFlagger
	purger      *maintenance.Purger
	blocked     *maintenance.BlockedSweeper // lost dependency releases

	mu       sync.RWMutex
	handlers map[string]*TaskDef
	names    []string // sorted keys of handlers, rebuilt by Register; read-only
	defs     sync.Map // *TaskDef → *preparedDef (validated submit-side data)

	slots     chan struct{} // one token per running attempt (Config.Workers)
	recording atomic.Int64  // attempts whose outcome is being written without a slot
	wake      chan struct{} // pokes the poller

	ctx      context.Context // canceled by Stop: no more claims
	cancel   context.CancelFunc
	workCtx  context.Context // parent of attempt contexts: canceled at the shutdown deadline
	workStop context.CancelFunc
	loops    sync.WaitGroup
	attempts sync.WaitGroup

	leases leaseSet
	flow   flowWakes // when each flow group may next admit (flow_control.go)
	health health
	shards shardView
	clock  dbClock // offset to the database's clock (clock.go)

	holdReads holdReads // when the poller reads the scheduled calls to hold (hold_reads.go)
	fair      fairShare // Config.TenantFairShare's claim state, the poller's (fair_share.go)

	progress progressSet // the attempts' progress reports (progress.go)

	renewStop    chan struct{} // closed by Stop once nothing holds a lease
	renewDone    chan struct{} // closed when renewLoop has returned
	pollDone     chan struct{} // closed when pollLoop has returned
	servicesDone chan struct{} // closed by Stop once the services that end with ctx have

	stopMu   sync.Mutex // guards stopping and every attempts.Add
	stopping bool
	stopOnce sync.Once
	stopErr  error
}

// Start opens the database, checks (or, with AutoMigrate, applies) the
// schema and starts the poller, the lease renewer and the background
// services (services.go): the completer, the held retries, the heartbeat,
// the maintenance role's election and, on its holder, the rescuer, the
// orphan flagger and the retention purge. The returned Runtime runs until Stop.
func Start(ctx context.Context, cfg Config) (*Runtime, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	db, dialect, own := cfg.DB, cfg.Dialect, false
	created := "" // a SQLite file that opening the DSN creates
	if db == nil {
		created = newSQLiteFile(cfg.DSN)
		if db, dialect, err = OpenDB(cfg.DSN); err != nil {
			return nil, err
		}
		own = true
	}
	useLogger(cfg.Logger, db) // a failover connector's lines, before its first connection
	closeOnErr := func(err error) (*Runtime, error) {
		if own {
			closeRefused(db, created) // and remove the empty file it created
		}
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		return closeOnErr(startPingError(db, cfg.DSN, err))
	}
	noteClientSide(cfg.Logger, db)
	if cfg.AutoMigrate {
		if _, err := Migrate(ctx, db, dialect); err != nil {
			return closeOnErr(err)
		}
	}
	st := newStore(db, dialect)
	st.SetLogger(cfg.Logger)
	if err := st.CheckSchema(ctx); err != nil {
		st.Close()
		return closeOnErr(st.GrantError(err))
	}
	rt := &Runtime{
		cfg:      cfg,
		store:    st,
		log:      cfg.Logger,
		ownDB:    own,
		handlers: map[string]*TaskDef{},
		slots:    make(chan struct{}, cfg.Workers),
		wake:     make(chan struct{}, 1),
	}
	rt.alerts = newAlerter(rt.log, cfg.AlertWorkers, cfg.AlertQueue, cfg.AlertTimeout)
	rt.alerts.channels = cfg.AlertChannels
	rt.renewStop, rt.renewDone, rt.pollDone = make(chan struct{}), make(chan struct{}), make(chan struct{})
	rt.servicesDone = make(chan struct{})
	rt.ctx, rt.cancel = context.WithCancel(context.Background())
	rt.workCtx, rt.workStop = context.WithCancel(context.Background())
	rt.newServices()
	fail := func(err error) (*Runtime, error) {
		rt.cancel()
		rt.workStop()
		rt.stopServices()
		rt.alerts.close(context.Background())
		_ = rt.completer.Stop(context.Background())
		st.Close()
		return closeOnErr(err)
	}
	if err := rt.completer.Start(rt.ctx); err != nil {
		return fail(err)
	}
	// One heartbeat before any claim: the first lease is on the database's
	// clock, and the shard split is known.
	if err := rt.heartbeater.Beat(ctx); err != nil {
		return fail(st.GrantError(err))
	}
	if err := rt.startServices(); err != nil {
		return fail(err)
	}
	rt.startLoops()
	rt.log.Info("argo: runtime started", "instance", cfg.InstanceID, "dialect", dialect, "workers", cfg.Workers)
	rt.holds.LogDeadHolds(ctx)
	return rt, nil
}

// DB returns the runtime's database handle, to begin transactions that
// SubmitTx writes into.
func (rt *Runtime) DB() *sql.DB { return rt.store.DB() }

// Dialect returns "mysql" or "sqlite".
func (rt *Runtime) Dialect() string { return rt.store.Dialect() }

// InstanceID returns the name this runtime leases tasks under.
func (rt *Runtime) InstanceID() string { return rt.cfg.InstanceID }

// Register adds handlers for the task names of defs; each needs Run.
// Registering again under the same name replaces the handler (a receiver
// rebound). Rows already waiting for a name are picked up at the next poll.
func (rt *Runtime) Register(defs ...*TaskDef) error {
	var errs []error
	valid := make([]*TaskDef, 0, len(defs))
	for _, d := range defs {
		if err := d.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if d.Run == nil {
			errs = append(errs, fmt.Errorf("argo: task %s: Register needs Run", d.Name))
			continue
		}
		if err := rt.checkTaskChannels(d); err != nil {
			errs = append(errs, err)
			continue
		}
		valid = append(valid, d)
	}
	if err := rt.checkFlowGroups(valid); err != nil {
		return errors.Join(append(errs, err)...)
	}
	// All at once: a claim sees every name of one Register call or none.
	rt.mu.Lock()
	for _, d := range valid {
		rt.handlers[d.Name] = d
	}
	names := make([]string, 0, len(rt.handlers))
	for n := range rt.handlers {
		if rt.cfg.worksName(n) { // Config.TaskNames (instance_scope.go)
			names = append(names, n)
		}
	}
	slices.Sort(names)
	rt.names = names
	rt.mu.Unlock()
	if len(errs) == 0 {
		rt.poke()
	}
	return errors.Join(errs...)
}

// handlerNames lists the registered task names, sorted: the only names this
// instance claims.
func (rt *Runtime) handlerNames() []string {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return rt.names
}

func (rt *Runtime) handler(name string) *TaskDef {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return rt.handlers[name]
}

// Stop stops claiming and waits for the running attempts, sync ones
// included, until Config.ShutdownTimeout passes or ctx ends, whichever comes
// first. Then it cancels the attempts still running and gives their tasks
// back (the attempt is not counted). Their leases stay renewed until their
// functions return, however long that takes. Queued alert actions run until
// ctx ends (stopGrace after the cancellation if ctx has no deadline); those
// left are dropped with an error log. The maintenance role is handed over
// at once, and flow groups' slot grants once the poller has stopped. It logs what it waits for and, at the deadline, what it cancels
// (stop_log.go).
//
// Stop returns within ctx (within stopGrace of the cancellation if ctx has no
// deadline). If attempts ignore their cancellation, the error names them;
// an alert they fire after Stop is logged, its action not run;
// their leases are renewed, and the database handle kept open, until they
// return. It is safe to call more than once.
func (rt *Runtime) Stop(ctx context.Context) error {
	rt.stopOnce.Do(func() { rt.stopErr = rt.stop(ctx) })
	return rt.stopErr
}

// stopGrace is how long Stop waits for canceled attempts to return when its
// context has no deadline.
const stopGrace = 5 * time.Second

func (rt *Runtime) stop(ctx context.Context) error {
	began := time.Now()
	rt.stopMu.Lock()
	rt.stopping = true // no attempt starts after this
	rt.stopMu.Unlock()
	rt.cancel() // the poller and the services stop; holds are given back, the role handed over
	go func() { rt.stopServices(); close(rt.servicesDone) }()
	attemptsDone := make(chan struct{})
	go func() { rt.attempts.Wait(); close(attemptsDone) }()
	loopsDone := make(chan struct{})
	go func() { rt.loops.Wait(); close(loopsDone) }()

	rt.logStopWaiting(rt.stopWait(ctx))
	timer := time.NewTimer(rt.cfg.ShutdownTimeout)
	select {
	case <-attemptsDone:
	case <-ctx.Done():
		rt.logStopCanceling(time.Since(began))
	case <-timer.C:
		rt.logStopCanceling(time.Since(began))
	}
	timer.Stop()
	rt.workStop() // attempts still running see their context canceled and are given back

	// Every wait from here ends with ctx, or stopGrace after the cancellation.
	waitCtx, cancelWait := context.WithTimeout(ctx, stopGrace)
	defer cancelWait()
	waitFor := func(done <-chan struct{}) bool {
		select {
		case <-done:
			return true
		case <-waitCtx.Done():
		}
		select { // done and the deadline at once: done wins
		case <-done:
			return true
		default:
			return false
		}
	}
	var errs []error
	if !waitFor(attemptsDone) {
		if running := rt.leases.running(); len(running) > 0 {
			errs = append(errs, fmt.Errorf("argo: Stop: still running after cancellation (their leases are renewed until they return): %s", describeRunning(running)))
		} else {
			errs = append(errs, errors.New("argo: Stop: attempts still writing their outcome"))
		}
	}
	if !waitFor(loopsDone) && len(errs) == 0 {
		errs = append(errs, errors.New("argo: Stop: outcomes still being written in the background"))
	}
	if !waitFor(rt.servicesDone) && len(errs) == 0 {
		errs = append(errs, errors.New("argo: Stop: held retries still being started or given back"))
	}
	if waitFor(rt.pollDone) {
		rt.dropGrants(waitCtx) // no claim from here: the others need not wait for them
	}
	// Leave argo_instance at once, so the others take our shards without
	// waiting for the timeout (5 s at most).
	_ = rt.heartbeater.Stop(waitCtx)

	// The rest waits for the last lease holder: the renewer runs, and the
	// database stays open, until every attempt has returned and every
	// outcome has been written.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		<-attemptsDone
		<-loopsDone
		<-rt.servicesDone
		close(rt.renewStop)
		<-rt.renewDone
		drainCtx, cancelDrain := context.WithTimeout(context.Background(), completerDrainTimeout)
		_ = rt.completer.Stop(drainCtx)
		cancelDrain()
		_ = rt.heartbeater.Stop(context.Background()) // its loop has returned: before the handle closes
		rt.store.Close()
		if rt.ownDB {
			rt.store.DB().Close()
		}
		rt.log.Info("argo: runtime stopped", "instance", rt.cfg.InstanceID, "took", time.Since(began).Round(time.Millisecond))
	}()
	if !waitFor(closed) {
		if len(errs) == 0 {
			errs = append(errs, errors.New("argo: Stop: the lease renewer has not finished"))
		}
		rt.log.Error("argo: Stop returned before everything stopped", "error", errors.Join(errs...))
	}
	// Last, and only for what is left of ctx: alert actions still queued.
	rt.alerts.close(waitCtx)
	return errors.Join(errs...)
}
