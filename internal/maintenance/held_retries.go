package maintenance

import (
	"container/heap"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// Held retries. A failed attempt whose retry falls due within Hold stays
// leased by this instance: the failure is written with lease_until = due +
// LeaseDuration, which keeps every claim away, and a local timer restarts
// the task at its due time with one fenced UPDATE per task, batched in one
// transaction (one round trip on MySQL). No claim query and no re-read of
// the row: the retry starts within a millisecond or two of its due time,
// however many fall due together, and a due retry takes a free worker
// before the poller does.
//
// The database stays the safety net. Stop gives the holds back (the rows
// become claimable by anyone at once); after a crash a hold runs out at
// due + LeaseDuration and any instance claims the retry, as it would rescue
// a running attempt. The start is fenced (still retrying, same owner,
// attempt and hold), so a retry an operator discarded, or that another
// instance claimed after the hold ran out, is not run.

// Held-retry defaults and bounds.
const (
	// HeldRetriesMaxDefault bounds the retries one instance holds in memory
	// (each keeps its arguments); a failure beyond it goes back to the
	// database as usual.
	HeldRetriesMaxDefault = 10000
	// HeldStartLead is how early the start of a held retry is written: the
	// attempt itself waits for its due time, so a slow commit (a log flush
	// stall) does not make it late.
	HeldStartLead = 20 * time.Millisecond
	// HeldStartWriters bounds the start transactions in flight (their
	// commits share log flushes).
	HeldStartWriters = 2
	// HeldStartTimeout bounds one start transaction.
	HeldStartTimeout = 30 * time.Second
	// HeldStartRetryAfter is when a batch whose start failed is tried again.
	HeldStartRetryAfter = 200 * time.Millisecond
	// HeldGiveBackTimeout bounds giving the holds back at Stop.
	HeldGiveBackTimeout = 5 * time.Second
	// heldGiveBackBatch is how many holds one statement gives back.
	heldGiveBackBatch = 500
)

// heldStore is what the held retries run (*storage.Store).
type heldStore interface {
	StartHeld(ctx context.Context, owner string, holds []storage.HeldStart, leaseUntil, now storage.Millis) ([]bool, error)
	ResolveHeldStart(ctx context.Context, owner string, holds []storage.HeldStart, leaseUntil, now storage.Millis) ([]bool, error)
	OutcomeKnown(err error) bool
	ReleaseHolds(ctx context.Context, owner string, keys []storage.RowKey) error
	DeadHolds(ctx context.Context, self string, cutoff, now storage.Millis) ([]storage.DeadHold, error)
}

// HeldRetriesConfig is the held retries' configuration and dependencies.
// H is the runtime's handler type, carried from Hold to Run untouched.
type HeldRetriesConfig[H any] struct {
	// Owner is this instance's id (required): holds are leased by it.
	Owner string
	// Hold: a retry due within Hold may be held; zero or less disables
	// holding (CanHold is false).
	Hold time.Duration
	// LeaseDuration is the lease a started retry gets. Default 30s.
	LeaseDuration time.Duration
	// InstanceTimeout says which instances are gone, for LogDeadHolds.
	// Default HeartbeaterInstanceTimeoutDefault (6s).
	InstanceTimeout time.Duration
	// MaxHeld bounds the holds in memory. Default HeldRetriesMaxDefault (10,000).
	MaxHeld int
	// MaxStarting bounds the retries being started or waiting for a
	// worker at a time (the runtime passes max(ClaimBatch, 2×Workers)).
	// Default 64.
	MaxStarting int
	// Now is the database clock's time. Default time.Now.
	Now func() time.Time
	// Logger. Default slog.Default().
	Logger *slog.Logger
	// Register registers up to n starts with the runtime's Stop (each ends
	// in Run or in Unregister) and returns how many it registered (0 once
	// the runtime is stopping). Default: all of them.
	Register func(n int) int
	// Unregister ends k registrations that did not become a Run.
	Unregister func(k int)
	// Run runs a started retry (running, leased by Owner) at due, on a free
	// worker; it must call DoneWaiting once the retry has a worker or is
	// given back. Required.
	Run func(t *storage.Task, h H, due time.Time)
	// Failed is told of a failed start write (op "start held retries");
	// Answered of one that got through.
	Failed   func(op string, err error)
	Answered func()
}

type heldRetry[H any] struct {
	t     *storage.Task
	h     H
	due   time.Time
	start storage.HeldStart
}

// HeldRetries is the instance's held retries, earliest due first, and the
// loop that starts them as they fall due while workers are free.
type HeldRetries[H any] struct {
	cfg   HeldRetriesConfig[H]
	store heldStore
	life  lifecycle

	mu     sync.Mutex
	queue  heldQueue[H]
	closed bool
	n      atomic.Int64  // len(queue), read without the lock
	kick   chan struct{} // a new hold, or a freed worker
	// waiting counts retries being started or waiting for a worker.
	waiting atomic.Int64
	writers chan struct{} // start transactions in flight (HeldStartWriters)
	skipped skippedHolds  // starts refused, logged together (held_skips.go)
}

// NewHeldRetries returns the held retries over store.
func NewHeldRetries[H any](store heldStore, cfg HeldRetriesConfig[H]) *HeldRetries[H] {
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = 30 * time.Second
	}
	if cfg.InstanceTimeout <= 0 {
		cfg.InstanceTimeout = HeartbeaterInstanceTimeoutDefault
	}
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = HeldRetriesMaxDefault
	}
	if cfg.MaxStarting <= 0 {
		cfg.MaxStarting = 64
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Register == nil {
		cfg.Register = func(n int) int { return n }
	}
	if cfg.Unregister == nil {
		cfg.Unregister = func(int) {}
	}
	if cfg.Failed == nil {
		cfg.Failed = func(string, error) {}
	}
	if cfg.Answered == nil {
		cfg.Answered = func() {}
	}
	return &HeldRetries[H]{cfg: cfg, store: store, life: lifecycle{name: "held retries"},
		kick: make(chan struct{}, 1), writers: make(chan struct{}, HeldStartWriters)}
}

// Start starts held retries as they fall due, until Stop or until ctx
// ends; then the holds still queued are given back.
func (hs *HeldRetries[H]) Start(ctx context.Context) error {
	_, err := hs.life.start(ctx, hs.loop)
	return err
}

// Stop ends the loop (giving the queued holds back), waits for the start
// writes in flight, and logs the starts refused in a window still open; it
// waits until ctx ends.
func (hs *HeldRetries[H]) Stop(ctx context.Context) error {
	first, err := hs.life.stop(ctx)
	if !first {
		// Never started: nothing to start, but holds may have queued.
		hs.giveBack(hs.close())
	}
	if err == nil {
		hs.logSkipped() // held retries skipped in a window still open
	}
	return err
}

// CanHold reports whether a retry due after delay may be held.
func (hs *HeldRetries[H]) CanHold(delay time.Duration) bool {
	return hs.cfg.Hold > 0 && delay <= hs.cfg.Hold && hs.n.Load() < int64(hs.cfg.MaxHeld)
}

// Hold queues a retry whose held failure was written: failed is the task
// as its attempt ran, f the finish written (f.Due, f.HoldUntil), due the
// local due time. After Stop the hold is given back at once instead.
func (hs *HeldRetries[H]) Hold(failed *storage.Task, h H, f storage.Finishing, due time.Time) {
	t := *failed // the failed attempt's caller keeps its own
	t.State, t.ExecuteTime, t.LeaseUntil = storage.StateRetrying, f.Due, f.HoldUntil
	if f.Deferred {
		t.DeferredTimes++ // as the finish wrote it
	}
	e := &heldRetry[H]{t: &t, h: h, due: due, start: storage.HeldStart{ID: t.ID, Shard: t.ShardKey, Attempt: t.ExecuteTimes, HoldUntil: f.HoldUntil}}
	hs.enqueue(e)
}

// enqueue queues one hold, or gives it back at once after Stop.
func (hs *HeldRetries[H]) enqueue(e *heldRetry[H]) {
	hs.mu.Lock()
	if hs.closed {
		hs.mu.Unlock()
		hs.giveBack([]*heldRetry[H]{e})
		return
	}
	heap.Push(&hs.queue, e)
	hs.n.Store(int64(len(hs.queue)))
	hs.mu.Unlock()
	hs.Kick()
}

// Kick wakes the loop (a worker was freed).
func (hs *HeldRetries[H]) Kick() {
	select {
	case hs.kick <- struct{}{}:
	default:
	}
}

// Held returns how many retries are queued.
func (hs *HeldRetries[H]) Held() int { return int(hs.n.Load()) }

// Waiting returns how many retries are being started or wait for a worker.
func (hs *HeldRetries[H]) Waiting() int { return int(hs.waiting.Load()) }

// DoneWaiting ends the wait of a retry handed to Run: it took a worker, or
// was given back.
func (hs *HeldRetries[H]) DoneWaiting() {
	hs.waiting.Add(-1)
	hs.Kick()
}

// AnyDue reports whether a hold is due at now.
func (hs *HeldRetries[H]) AnyDue(now time.Time) bool {
	if hs.n.Load() == 0 {
		return false
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return len(hs.queue) > 0 && !hs.queue[0].due.After(now)
}

// CountDue counts the holds due at now, up to limit.
func (hs *HeldRetries[H]) CountDue(now time.Time, limit int) int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	n := 0
	for _, e := range hs.queue { // a heap: due ones are anywhere
		if n >= limit {
			break
		}
		if !e.due.After(now) {
			n++
		}
	}
	return n
}

// TakeStartWriters takes every start writer, as start writes that hang
// would (tests: an outage), and returns the func that gives them back.
func (hs *HeldRetries[H]) TakeStartWriters() (giveBack func()) {
	for range HeldStartWriters {
		hs.writers <- struct{}{}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for range HeldStartWriters {
				<-hs.writers
			}
			hs.Kick()
		})
	}
}

// nextDue returns how long until the earliest hold is due (a long time when
// there is none).
func (hs *HeldRetries[H]) nextDue(now time.Time) time.Duration {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if len(hs.queue) == 0 {
		return time.Hour
	}
	return hs.queue[0].due.Sub(now)
}

// takeDue removes up to max holds due at now, earliest first.
func (hs *HeldRetries[H]) takeDue(now time.Time, max int) []*heldRetry[H] {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	var out []*heldRetry[H]
	for len(out) < max && len(hs.queue) > 0 && !hs.queue[0].due.After(now) {
		out = append(out, heap.Pop(&hs.queue).(*heldRetry[H]))
	}
	hs.n.Store(int64(len(hs.queue)))
	return out
}

// requeue puts holds whose start could not be written back in the queue,
// due again at retryAt, except those whose hold has run out by then.
func (hs *HeldRetries[H]) requeue(es []*heldRetry[H], retryAt time.Time) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.closed {
		return // the holds run out in the database; any instance claims them then
	}
	for _, e := range es {
		if storage.ToMillis(retryAt) < e.start.HoldUntil {
			e.due = retryAt
			heap.Push(&hs.queue, e)
		}
	}
	hs.n.Store(int64(len(hs.queue)))
}

// close empties the queue for good and returns what it held.
func (hs *HeldRetries[H]) close() []*heldRetry[H] {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.closed = true
	out := []*heldRetry[H](hs.queue)
	hs.queue = nil
	hs.n.Store(0)
	return out
}

func (hs *HeldRetries[H]) loop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := hs.nextDue(hs.cfg.Now()) - HeldStartLead
		if wait <= 0 {
			// Due but not startable now (no room, or every writer busy):
			// whatever frees room kicks the loop; the timer is a backstop.
			wait = 50 * time.Millisecond
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			hs.giveBack(hs.close())
			return
		case <-timer.C:
		case <-hs.kick:
		}
		hs.startDue(ctx)
	}
}

// startDue starts the holds due within HeldStartLead, a batch per
// transaction, with up to HeldStartWriters transactions in flight. A
// started retry waits for its due time, then takes the next free worker:
// the start write holds none, so workers run attempts while later batches
// are written. At most MaxStarting retries are being started or waiting at
// a time.
func (hs *HeldRetries[H]) startDue(ctx context.Context) {
	for ctx.Err() == nil {
		now := hs.cfg.Now()
		room := hs.cfg.MaxStarting - int(hs.waiting.Load())
		if room <= 0 || !hs.AnyDue(now.Add(HeldStartLead)) {
			return // a retry that takes a worker kicks the loop again
		}
		select {
		case hs.writers <- struct{}{}:
		default:
			return // every writer busy; the first to finish kicks the loop
		}
		k := hs.cfg.Register(room)
		batch := hs.takeDue(now.Add(HeldStartLead), k)
		hs.cfg.Unregister(k - len(batch))
		if len(batch) == 0 {
			<-hs.writers
			return
		}
		hs.waiting.Add(int64(len(batch)))
		if !hs.life.spawn(func() { hs.startBatch(batch, now) }) {
			// Stopped meanwhile: nothing is started; the holds go back.
			<-hs.writers
			hs.waiting.Add(-int64(len(batch)))
			hs.cfg.Unregister(len(batch))
			hs.giveBack(batch)
			return
		}
	}
}

// startBatch writes the start of a batch of holds and runs those still
// this instance's; startDue registered each with the runtime's Stop and
// counted it as waiting.
func (hs *HeldRetries[H]) startBatch(batch []*heldRetry[H], now time.Time) {
	defer hs.Kick()
	starts := make([]storage.HeldStart, len(batch))
	for i, e := range batch {
		starts[i] = e.start
	}
	leaseUntil := storage.ToMillis(now.Add(hs.cfg.LeaseDuration))
	// Not the loop's context: a start write under way when Stop begins
	// lands, and the started retries are then given back unrun (Run).
	ctx, cancel := context.WithTimeout(context.Background(), HeldStartTimeout)
	started, err := hs.store.StartHeld(ctx, hs.cfg.Owner, starts, leaseUntil, storage.ToMillis(now))
	if err != nil && !hs.store.OutcomeKnown(err) {
		// The start may have landed (its rows now running, leased by this
		// instance): find out per row before acting (internal/storage/resolve.go).
		started, err = hs.store.ResolveHeldStart(ctx, hs.cfg.Owner, starts, leaseUntil, storage.ToMillis(now))
	}
	cancel()
	<-hs.writers
	if err != nil {
		hs.waiting.Add(-int64(len(batch)))
		hs.cfg.Unregister(len(batch))
		hs.cfg.Failed("start held retries", err)
		// Try again shortly; a hold that ran out meanwhile is left to the
		// database, where any instance claims it.
		hs.requeue(batch, hs.cfg.Now().Add(HeldStartRetryAfter))
		return
	}
	hs.cfg.Answered()
	var skipped []*heldRetry[H]
	for i, e := range batch {
		if !started[i] {
			hs.waiting.Add(-1)
			skipped = append(skipped, e)
			continue
		}
		t := e.t
		t.ExecuteTimes++
		t.State, t.LeaseOwner, t.LeaseUntil, t.GmtModified = storage.StateRunning, hs.cfg.Owner, leaseUntil, storage.ToMillis(now)
		hs.cfg.Run(t, e.h, e.due)
	}
	// Noted before they end their registration, so Stop logs them.
	hs.noteSkipped(skipped)
	hs.cfg.Unregister(len(skipped))
}

// giveBack releases holds so that any instance may claim the retries when
// due (Stop, or a hold that came too late to queue).
func (hs *HeldRetries[H]) giveBack(es []*heldRetry[H]) {
	if len(es) == 0 {
		return
	}
	ids := make([]storage.RowKey, len(es))
	for i, e := range es {
		ids[i] = storage.RowKey{ID: e.t.ID, Shard: e.t.ShardKey}
	}
	ctx, cancel := context.WithTimeout(context.Background(), HeldGiveBackTimeout)
	defer cancel()
	for len(ids) > 0 {
		n := min(len(ids), heldGiveBackBatch)
		if err := hs.store.ReleaseHolds(ctx, hs.cfg.Owner, ids[:n]); err != nil {
			hs.cfg.Logger.Warn("argo: held retries not given back; they are claimable once their hold runs out", "tasks", len(ids), "error", err)
			return
		}
		ids = ids[n:]
	}
}

// LogDeadHolds logs the retries held by instances that are gone (crashed,
// or killed without Stop): no instance runs them before their hold runs
// out, so this instance waits for them until then. One INFO line: how
// many, by which instances, and when the last hold runs out. Nothing is
// logged when there are none; a failed read is logged. The runtime calls
// it at Start.
func (hs *HeldRetries[H]) LogDeadHolds(ctx context.Context) {
	now := hs.cfg.Now()
	holds, err := hs.store.DeadHolds(ctx, hs.cfg.Owner, storage.ToMillis(now.Add(-hs.cfg.InstanceTimeout)), storage.ToMillis(now))
	if err != nil {
		hs.cfg.Logger.Warn("argo: could not read the retries held by instances that are gone", "error", err)
		return
	}
	if len(holds) == 0 {
		return
	}
	total, latest := 0, storage.Millis(0)
	byOwner := map[string]int{}
	for _, h := range holds {
		total += h.Tasks
		latest = max(latest, h.Until)
		byOwner[h.Owner] = h.Tasks
	}
	hs.cfg.Logger.Info("argo: retries held by instances that are gone wait until their hold runs out; then any instance runs them",
		"tasks", total, "held_by", describeNameCounts(byOwner), "until", latest.Time().UTC().Format(time.RFC3339), "wait", latest.Time().Sub(now).Round(time.Second))
}

type heldQueue[H any] []*heldRetry[H]

func (q heldQueue[H]) Len() int           { return len(q) }
func (q heldQueue[H]) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q heldQueue[H]) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *heldQueue[H]) Push(x any)        { *q = append(*q, x.(*heldRetry[H])) }
func (q *heldQueue[H]) Pop() any {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return x
}
