package runtime

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// Execer is what a transactional submit writes through: *sql.Tx, *sqlx.Tx,
// *sql.DB and *sql.Conn all satisfy it.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Runtime persists, claims and runs tasks. It is safe for concurrent use.
type Runtime struct {
	cfg    Config
	store  *storage.Store
	log    *slog.Logger
	alerts *alerter
	// completer batches finish writes of concurrent attempts.
	completer *completer
	ownDB     bool // the runtime opened the handle and closes it at Stop

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
	holds  retryHolds // held retries (retry_hold.go)
	health health
	shards shardView
	clock  dbClock // offset to the database's clock (clock.go)

	renewStop chan struct{} // closed by Stop once nothing holds a lease
	renewDone chan struct{} // closed when renewLoop has returned

	stopMu   sync.Mutex // guards stopping and every attempts.Add
	stopping bool
	stopOnce sync.Once
	stopErr  error
}

// Start opens the database, checks (or, with AutoMigrate, applies) the
// schema and starts the poller, the lease renewer, the rescuer and the
// retention purge. The returned Runtime runs until Stop.
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
	rt.completer = newCompleter(rt)
	rt.renewStop, rt.renewDone = make(chan struct{}), make(chan struct{})
	rt.holds.kick = make(chan struct{}, 1)
	rt.holds.writers = make(chan struct{}, maxStartWriters)
	rt.ctx, rt.cancel = context.WithCancel(context.Background())
	rt.workCtx, rt.workStop = context.WithCancel(context.Background())
	if err := rt.shards.start(ctx, rt); err != nil {
		rt.cancel()
		rt.workStop()
		rt.alerts.close(context.Background())
		rt.completer.close()
		st.Close()
		return closeOnErr(st.GrantError(err))
	}
	rt.startLoops()
	rt.log.Info("argo: runtime started", "instance", cfg.InstanceID, "dialect", dialect, "workers", cfg.Workers)
	rt.logDeadHolds(ctx)
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
		valid = append(valid, d)
	}
	// All at once: a claim sees every name of one Register call or none.
	rt.mu.Lock()
	for _, d := range valid {
		rt.handlers[d.Name] = d
	}
	names := make([]string, 0, len(rt.handlers))
	for n := range rt.handlers {
		names = append(names, n)
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

// preparedDef caches what every submit of one TaskDef shares.
type preparedDef struct {
	policy     RetryPolicy
	policyJSON string
}

func (rt *Runtime) prepare(d *TaskDef) (*preparedDef, error) {
	if p, ok := rt.defs.Load(d); ok {
		return p.(*preparedDef), nil
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	pol := d.policy()
	p := &preparedDef{policy: pol, policyJSON: encodePolicy(pol)}
	rt.defs.Store(d, p)
	return p, nil
}

// newTask builds the row for c.
func (rt *Runtime) newTask(c Call, p *preparedDef, now time.Time) *Task {
	d := c.Task
	mode, thread := d.Mode, d.Thread
	if mode == 0 {
		mode = Immediate
	}
	if thread == 0 {
		thread = Async
	}
	due := now
	if mode == Scheduled {
		due = now.Add(d.Delay)
	}
	if !c.RunAt.IsZero() {
		due = c.RunAt
	}
	t := &Task{
		Name: d.Name, State: StatePending, MaxAttempts: p.policy.MaxAttempts, ExecuteTime: toMillis(due),
		ParameterTypes: d.ParameterTypes, MethodName: d.MethodName, MethodSignName: d.Signature,
		ExecuteIntervalSec: int(p.policy.Initial / time.Second), DelayTime: int(d.Delay / time.Second),
		Parameter: string(c.Args), PerformanceWay: mode, ThreadWay: thread,
		AlertExpression: d.Alert, AlertActionBeanName: d.AlertActionName, FallbackClassName: d.FallbackName,
		ShardKey: rt.shardFor(c.ShardBy), RetryPolicyJSON: p.policyJSON,
		GmtCreate: toMillis(now), GmtModified: toMillis(now),
	}
	if c.UniqueKey != "" {
		t.UniqueKey = sql.NullString{String: c.UniqueKey, Valid: true}
	}
	return t
}

// shardFor hashes ShardBy into the shard space, or picks a shard at random.
func (rt *Runtime) shardFor(by string) int {
	if by == "" {
		return rand.IntN(rt.cfg.Shards)
	}
	h := fnv.New32a()
	h.Write([]byte(by))
	return int(h.Sum32() % uint32(rt.cfg.Shards))
}

// Submit persists c and then follows its TaskDef: a Scheduled task (or one
// with RunAt) waits for its time; an Immediate Async task runs on the pool
// at once; an Immediate Sync task runs its first attempt in the caller's
// goroutine, and Submit returns that attempt's error as an *AttemptError
// (the task is persisted either way and retried per its policy).
//
// Nothing runs before its row is committed. Submit returns nil only when
// the row exists. An error wrapping ErrNotPersisted means the row was
// certainly not written and the call will not happen. When the INSERT's
// answer is lost (the connection dropped, ctx ended mid-statement), Submit
// finds out by running the same INSERT again (each submit carries a unique
// token), until ctx's deadline and for at least storage.SubmitResolveFloor (5 s);
// if the database stays unreachable that long it returns an error wrapping
// ErrOutcomeUnknown. A refusal caused by lock conflicts (deadlock, lock wait
// timeout, certification failure) is retried up to maxSubmitLockTries (10)
// times with jittered backoff first. A UniqueKey already used returns the
// existing id and ErrDuplicate.
func (rt *Runtime) Submit(ctx context.Context, c Call) (int64, error) {
	if c.Task == nil {
		return 0, notPersisted("?", errors.New("Call.Task is nil"))
	}
	p, err := rt.prepareCall(c)
	if err != nil {
		return 0, notPersisted(c.Task.Name, err)
	}
	if err := ctx.Err(); err != nil {
		return 0, notPersisted(c.Task.Name, err) // nothing sent
	}
	now := rt.now()
	t := rt.newTask(c, p, now)
	h := rt.handler(t.Name)
	runNow := t.PerformanceWay == Immediate && c.RunAt.IsZero() && h != nil
	sync := runNow && t.ThreadWay == Sync
	switch {
	case sync:
		runNow = rt.reserveSync()
		sync = runNow
	case runNow:
		runNow = rt.reserve(1) == 1 // a full pool (or Stop) leaves it to the poller
	}
	if runNow {
		// Written already leased by this instance, so no poller can take it
		// and the first attempt needs no claim round trip.
		t.State, t.ExecuteTimes, t.LeaseOwner = StateRunning, 1, rt.cfg.InstanceID
		t.LeaseUntil = toMillis(now.Add(rt.cfg.LeaseDuration))
	}
	token := storage.NewSubmitToken()
	resolved, err := rt.store.SubmitInsert(ctx, t, token)
	if err != nil {
		var unresolved *storage.UnresolvedError
		switch {
		case errors.Is(err, ErrDuplicate):
			rt.endSubmitReservation(sync, runNow)
			return t.ID, err
		case errors.As(err, &unresolved):
			rt.health.failed(rt, "submit", err)
			if runNow {
				// The reservation passes to the background resolution.
				rt.resolveSubmitLater(t, token, h, sync)
			}
			return 0, outcomeUnknown(t.Name, unresolved.Last)
		}
		rt.endSubmitReservation(sync, runNow)
		if ctx.Err() == nil { // the caller's deadline is no database outage
			rt.health.failed(rt, "submit", err)
		}
		return 0, notPersisted(t.Name, err)
	}
	if resolved && runNow && !rt.confirmResolvedLease(ctx, t) {
		rt.endSubmitReservation(sync, runNow)
		return t.ID, nil // persisted; no longer this instance's to run now
	}
	rt.metricSubmitted(t.Name)
	switch {
	case sync:
		return t.ID, rt.runAttempt(ctx, t, h, true)
	case runNow:
		rt.goAttempt(t, h, false)
	default:
		rt.scheduleWake(t.ExecuteTime.Time())
	}
	return t.ID, nil
}

// SubmitTx writes c inside the caller's transaction (the outbox pattern):
// a rollback drops it, a commit makes it durable. After the commit an
// Immediate task runs at once (a watcher sees the row appear) rather than
// at the next poll; Sync is treated as Async here, since the attempt cannot
// run before the caller commits.
//
// SubmitTx cannot retry inside the caller's transaction: a lock refusal
// (deadlock 1213, certification failure, Group Replication 3101: the
// database rolled the whole transaction back) returns an error wrapping
// ErrNotPersisted that says so. If the INSERT's answer is lost, the row is
// deleted again through tx (best effort; if tx is broken it cannot commit
// either) and the error wraps ErrNotPersisted. With an Execer that is not a
// transaction (*sql.DB, autocommit), a lost answer is resolved as in Submit.
func (rt *Runtime) SubmitTx(ctx context.Context, tx Execer, c Call) (int64, error) {
	if c.Task == nil {
		return 0, notPersisted("?", errors.New("Call.Task is nil"))
	}
	if tx == nil {
		return 0, notPersisted(c.Task.Name, errors.New("SubmitTx needs a transaction"))
	}
	p, err := rt.prepareCall(c)
	if err != nil {
		return 0, notPersisted(c.Task.Name, err)
	}
	t := rt.newTask(c, p, rt.now())
	token := storage.NewSubmitToken()
	if err := rt.store.InsertToken(ctx, tx, t, token); err != nil {
		if errors.Is(err, ErrDuplicate) {
			return t.ID, err
		}
		if rt.store.OutcomeKnown(err) {
			return 0, notPersisted(t.Name, rt.store.Driver().DescribeLockRefusal(err))
		}
		if err := rt.store.ResolveTxInsert(ctx, tx, t, token, err); err != nil {
			return 0, err
		}
	}
	rt.metricSubmitted(t.Name)
	if t.PerformanceWay == Immediate && c.RunAt.IsZero() && rt.handler(t.Name) != nil {
		rt.watchCommit(t.ID)
	} else {
		rt.scheduleWake(t.ExecuteTime.Time())
	}
	return t.ID, nil
}

// watchCommit waits, briefly, for a transactionally submitted row to become
// visible (its transaction committed), then claims and runs it. After two
// poll intervals it gives up: the poller will find the row if it ever commits.
func (rt *Runtime) watchCommit(id int64) {
	rt.loops.Add(1)
	go func() {
		defer rt.loops.Done()
		deadline := time.Now().Add(2 * rt.cfg.PollInterval)
		wait := time.Millisecond
		for time.Now().Before(deadline) {
			select {
			case <-rt.ctx.Done():
				return
			case <-time.After(wait):
			}
			if wait < 50*time.Millisecond {
				wait *= 2
			}
			state, found, err := rt.store.TaskState(rt.ctx, id)
			if err == nil && !found {
				continue // not committed yet (or rolled back)
			}
			if err != nil || state != StatePending {
				return
			}
			if rt.reserve(1) == 0 {
				rt.poke()
				return
			}
			now := rt.now()
			t, err := rt.store.ClaimByID(rt.ctx, id, StatePending, rt.cfg.InstanceID, toMillis(now), toMillis(now.Add(rt.cfg.LeaseDuration)))
			if err != nil || t == nil {
				rt.unreserve(1)
				return
			}
			rt.goAttempt(t, rt.handler(t.Name), false)
			return
		}
	}()
}

// Stop stops claiming and waits for the running attempts, sync ones
// included, until Config.ShutdownTimeout passes or ctx ends, whichever comes
// first. Then it cancels the attempts still running and gives their tasks
// back (the attempt is not counted). Their leases stay renewed until their
// functions return, however long that takes. Queued alert actions run until
// ctx ends (stopGrace after the cancellation if ctx has no deadline); those
// left are dropped with an error log. The maintenance role is handed over
// at once. It logs what it waits for and, at the deadline, what it cancels
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
	rt.cancel()
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
	rt.shards.stop(waitCtx, rt)

	// The rest waits for the last lease holder: the renewer runs, and the
	// database stays open, until every attempt has returned and every
	// outcome has been written.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		<-attemptsDone
		<-loopsDone
		rt.logSkippedHolds() // held retries skipped in a window still open
		close(rt.renewStop)
		<-rt.renewDone
		rt.completer.close()
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

// reserve takes up to n worker slots and registers that many attempts with
// Stop, unless the runtime is stopping; it returns how many it took. Each
// reservation ends in runAttempt, or is given back with unreserve.
func (rt *Runtime) reserve(n int) int {
	rt.stopMu.Lock()
	defer rt.stopMu.Unlock()
	if rt.stopping {
		return 0
	}
	got := 0
	for got < n && rt.tryAcquire() {
		got++
	}
	rt.attempts.Add(got)
	return got
}

// unreserve gives back k reservations that did not become attempts.
func (rt *Runtime) unreserve(k int) {
	for range k {
		rt.release()
		rt.attempts.Done()
	}
}

// register registers n attempts with Stop without taking worker slots
// (started held retries take theirs when one is free), unless the runtime is
// stopping; it returns how many it registered.
func (rt *Runtime) register(n int) int {
	rt.stopMu.Lock()
	defer rt.stopMu.Unlock()
	if rt.stopping {
		return 0
	}
	rt.attempts.Add(n)
	return n
}

// unregister ends k registrations that did not become attempts.
func (rt *Runtime) unregister(k int) {
	for range k {
		rt.attempts.Done()
	}
}

// reserveSync registers an attempt that runs in the caller's goroutine (it
// takes no worker slot), unless the runtime is stopping.
func (rt *Runtime) reserveSync() bool {
	rt.stopMu.Lock()
	defer rt.stopMu.Unlock()
	if rt.stopping {
		return false
	}
	rt.attempts.Add(1)
	return true
}

func (rt *Runtime) tryAcquire() bool {
	select {
	case rt.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (rt *Runtime) release() {
	<-rt.slots
	rt.workerFreed()
}

// poke wakes the poller without blocking.
func (rt *Runtime) poke() {
	select {
	case rt.wake <- struct{}{}:
	default:
	}
}

// scheduleWake sets a local timer to poke the poller when a task falls due
// before the next poll, so a retry starts on time rather than up to a poll
// interval late. The poll remains the safety net.
func (rt *Runtime) scheduleWake(due time.Time) {
	d := due.Sub(rt.now()) // due is on the database's clock
	if d <= 0 {
		rt.poke()
		return
	}
	if d < rt.cfg.PollInterval {
		time.AfterFunc(d, rt.poke)
	}
}
