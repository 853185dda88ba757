package runtime

import (
	"context"
	"database/sql"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// Execer is what a transactional submit writes through: *sql.Tx, *sqlx.Tx,
// *sql.DB and *sql.Conn all satisfy it.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// preparedDef caches what every submit of one TaskDef shares.
type preparedDef struct {
	def        *TaskDef // the definition stored: the call's, or the registered one for a TaskDef that is only a Name
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
	p := &preparedDef{def: d, policy: pol, policyJSON: encodePolicy(pol)}
	rt.defs.Store(d, p)
	return p, nil
}

// newTask builds the row for c.
func (rt *Runtime) newTask(c Call, p *preparedDef, now time.Time) *Task {
	d := p.def
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
	if c.OrderKey != "" {
		t.OrderKey = sql.NullString{String: c.OrderKey, Valid: true}
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
// existing id and ErrDuplicate (0 and ErrDuplicateIDUnknown, which wraps
// it, if that id could not be read back). A row larger than the server accepts in one
// packet (MySQL's max_allowed_packet, less storage.PacketMargin) is refused
// at once, whatever ctx, with an error wrapping ErrNotPersisted that gives
// the size and the limit; so are SubmitTx and SubmitGroup.
func (rt *Runtime) Submit(ctx context.Context, c Call) (int64, error) {
	if c.Task == nil {
		return 0, notPersisted("?", errors.New("Call.Task is nil"))
	}
	if len(c.After) > 0 {
		return rt.submitDependent(ctx, c) // dependencies.go
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
	if err := rt.stampAndSeal(ctx, c, t); err != nil {
		return 0, notPersisted(c.Task.Name, err)
	}
	h := rt.handler(t.Name)
	// A task under flow control starts only through the gated claim, and so
	// does a keyed call (the claim's order gate, order_call.go).
	runNow := rt.startsOutsideClaim(c, t, h)
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
	// A lease written long ago (the INSERT waited on a lock, or its answer
	// was lost and resolved) is renewed from now before the attempt starts
	// (submit_lease.go).
	if runNow && (resolved || rt.submitLeaseAged(now)) && !rt.confirmResolvedLease(ctx, t) {
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
		rt.holdSoon(t.ExecuteTime.Time())
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
	if len(c.After) > 0 {
		return 0, notPersisted(c.Task.Name, errors.New("SubmitTx does not take Call.After (the dependency edges need argo's own transaction): use Submit or SubmitGroup"))
	}
	p, err := rt.prepareCall(c)
	if err != nil {
		return 0, notPersisted(c.Task.Name, err)
	}
	t := rt.newTask(c, p, rt.now())
	if err := rt.stampAndSeal(ctx, c, t); err != nil {
		return 0, notPersisted(c.Task.Name, err)
	}
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
	if rt.startsOutsideClaim(c, t, rt.handler(t.Name)) {
		rt.watchCommit(t.ID, t.ShardKey, token, t.ExecuteTime.Time())
	} else {
		rt.scheduleWake(t.ExecuteTime.Time())
		rt.holdSoon(t.ExecuteTime.Time())
	}
	return t.ID, nil
}
