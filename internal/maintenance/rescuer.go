package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
)

// Rescuer defaults.
const (
	// RescuerIntervalDefault is how often expired leases are looked for.
	RescuerIntervalDefault = 10 * time.Second
	// RescuerSettleDefault is how long after an outage that lapsed leases
	// the rescuer waits (the runtime passes its LeaseDuration).
	RescuerSettleDefault = 30 * time.Second
	// RescuerBatchDefault is how many expired leases one query returns.
	RescuerBatchDefault = 100
)

// rescueStore is what the rescuer runs (*storage.Store).
type rescueStore interface {
	ExpiredLeases(ctx context.Context, now storage.Millis, limit int) ([]*storage.Task, error)
	Rescue(ctx context.Context, f storage.Finishing, leaseUntil, now storage.Millis) error
}

// RescuerConfig is the rescuer's configuration and dependencies.
type RescuerConfig struct {
	// Interval is how often expired leases are looked for. Default
	// RescuerIntervalDefault (10s).
	Interval time.Duration
	// Settle is how long the database must have answered again, after an
	// outage long enough to lapse leases, before anything is rescued (live
	// instances renew their leases meanwhile). Default RescuerSettleDefault (30s).
	Settle time.Duration
	// Grace is how long after a lease ended, on the database's clock, it
	// is taken back. The instance that held it stops its function a margin
	// before the lease ends by its own clock when it cannot renew it (the
	// runtime's leaseStopMargin); Grace adds to that margin, so that the
	// next attempt starts only after the last one was told to stop, with
	// room for the two instances' clock errors. Default 0 (the runtime
	// passes LeaseDuration/10).
	Grace time.Duration
	// Batch is how many expired leases one query returns. Default
	// RescuerBatchDefault (100).
	Batch int
	// Now is the database clock's time. Default time.Now.
	Now func() time.Time
	// Logger receives the rescues. Default slog.Default().
	Logger *slog.Logger
	// Leading reports whether this instance holds the maintenance role;
	// nothing is rescued while it does not. Default: always.
	Leading func() bool
	// UpSince reports whether the database answers and since when it has,
	// after the last outage long enough to lapse leases (zero: none).
	// Default: up, no outage.
	UpSince func() (up bool, since time.Time)
	// Policy returns the retry policy of a rescued task (its stored
	// policy, else its handler's, else the default). Default:
	// argotype.DefaultRetryPolicy() for every task.
	Policy func(t *storage.Task) argotype.RetryPolicy
	// Next, if set, decides whether and when a rescued attempt's task runs
	// again (the runtime's retry strategies), given its policy and the
	// rescue's message. Default: the policy (Exhausted, Delay).
	Next func(t *storage.Task, pol argotype.RetryPolicy, msg string) (delay time.Duration, retry bool)
	// Rescued, if set, is told of each rescue written: the task as it was
	// (running or falling back) and the finish that took it back.
	Rescued func(t *storage.Task, f storage.Finishing)
	// Failed is told of a failed query (op "rescue").
	Failed func(op string, err error)
}

// Rescuer takes back tasks whose lease expired more than Grace ago (their
// instance died, hung, or was cut off from the database and has stopped
// their functions): the attempt counts as failed (outcome lease_expired),
// and the task goes on per its policy; a falling_back task goes back to
// exhausted to retry its fallback. Each rescue is fenced on the expired
// lease, so a lease renewed meanwhile wins.
//
// Right after an outage every lease looks expired, only because nobody
// could renew it: the rescuer waits Settle (a LeaseDuration) after the
// database answers again, so that live instances renew first (Settled).
//
// Start looks now (if it may and the database has settled) and then once
// per Interval until Stop; Wake makes it look at once (the periodic
// runner).
type Rescuer struct {
	periodic
	cfg   RescuerConfig
	store rescueStore
}

// NewRescuer returns a rescuer over store.
func NewRescuer(store rescueStore, cfg RescuerConfig) *Rescuer {
	if cfg.Interval <= 0 {
		cfg.Interval = RescuerIntervalDefault
	}
	if cfg.Settle <= 0 {
		cfg.Settle = RescuerSettleDefault
	}
	if cfg.Batch <= 0 {
		cfg.Batch = RescuerBatchDefault
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Leading == nil {
		cfg.Leading = func() bool { return true }
	}
	if cfg.UpSince == nil {
		cfg.UpSince = func() (bool, time.Time) { return true, time.Time{} }
	}
	if cfg.Policy == nil {
		cfg.Policy = func(*storage.Task) argotype.RetryPolicy { return argotype.DefaultRetryPolicy() }
	}
	if cfg.Failed == nil {
		cfg.Failed = func(string, error) {}
	}
	r := &Rescuer{cfg: cfg, store: store}
	r.periodic = newPeriodic("rescuer", cfg.Interval, func() bool { return cfg.Leading() && r.Settled() }, func(ctx context.Context) { r.rescue(ctx) })
	return r
}

// Grace is how long after a lease ended it is taken back (RescuerConfig.Grace).
func (r *Rescuer) Grace() time.Duration { return r.cfg.Grace }

// Settled reports whether the database answers and has for at least Settle
// since the last outage that lasted long enough to lapse leases (true if
// there was none). While it is not, leases may look expired only because
// nobody could renew them.
func (r *Rescuer) Settled() bool {
	up, since := r.cfg.UpSince()
	return up && (since.IsZero() || time.Since(since) >= r.cfg.Settle)
}

// rescue takes back every expired lease, a batch at a time, and returns
// how many it took.
func (r *Rescuer) rescue(ctx context.Context) int {
	rescued := 0
	for ctx.Err() == nil {
		now := r.cfg.Now()
		// Leases that ended more than Grace ago.
		tasks, err := r.store.ExpiredLeases(ctx, storage.ToMillis(now.Add(-r.cfg.Grace)), r.cfg.Batch)
		if err != nil {
			if ctx.Err() == nil {
				r.cfg.Failed("rescue", err)
			}
			return rescued
		}
		for _, t := range tasks {
			// Asked again before each write: an outage may have begun
			// and ended since the loop asked (or during the read), and
			// the lease read as expired may only have missed renewals.
			if !r.cfg.Leading() || !r.Settled() {
				return rescued
			}
			if r.rescueOne(ctx, t, now) {
				rescued++
			}
		}
		if len(tasks) < r.cfg.Batch {
			return rescued
		}
	}
	return rescued
}

func (r *Rescuer) rescueOne(ctx context.Context, t *storage.Task, now time.Time) bool {
	msg := fmt.Sprintf("lease of instance %s expired at %s (the instance stopped or hung); attempt %d counted as failed", t.LeaseOwner, t.LeaseUntil.Time().UTC().Format(time.RFC3339Nano), t.ExecuteTimes)
	hist := &storage.Attempt{TaskPK: t.ID, Attempt: t.ExecuteTimes, Kind: "attempt", Worker: t.LeaseOwner, StartedAt: t.GmtModified, FinishedAt: storage.ToMillis(now), Outcome: argotype.OutcomeLeaseExpired, Error: msg}
	f := storage.Finishing{Fence: storage.Fence{ID: t.ID, Shard: t.ShardKey, Owner: t.LeaseOwner, Attempt: t.ExecuteTimes, From: t.State}, ErrMsg: &msg, History: hist}
	if t.State == storage.StateFallingBack {
		hist.Kind = "fallback"
		f.To, f.Due = storage.StateExhausted, storage.ToMillis(now)
	} else if d, retry := r.next(t, msg); !retry {
		f.To, f.Due = storage.StateExhausted, storage.ToMillis(now)
	} else {
		hist.BackoffMs = d.Milliseconds()
		f.To, f.Due = storage.StateRetrying, storage.ToMillis(now.Add(d))
	}
	err := r.store.Rescue(ctx, f, t.LeaseUntil, storage.ToMillis(now))
	if errors.Is(err, storage.ErrLeaseLost) {
		return false // renewed or finished meanwhile: the worker won
	}
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Logger.Error("argo: lease rescue failed", "task_id", t.ID, "error", err)
		}
		return false
	}
	r.cfg.Logger.Warn("argo: rescued expired lease", "task_id", t.ID, "task", t.Name, "attempt", t.ExecuteTimes, "shard", t.ShardKey, "owner", t.LeaseOwner, "next", f.To)
	if r.cfg.Rescued != nil {
		r.cfg.Rescued(t, f)
	}
	return true
}

// next is the retry decision for rescued task t: Config.Next, else its policy.
func (r *Rescuer) next(t *storage.Task, msg string) (time.Duration, bool) {
	pol := r.cfg.Policy(t)
	if r.cfg.Next != nil {
		return r.cfg.Next(t, pol, msg)
	}
	// Deferred attempts (RetryAfter) are not counted by the policy.
	n := max(t.ExecuteTimes-t.DeferredTimes, 1)
	if pol.Exhausted(n) {
		return 0, false
	}
	return pol.Delay(t.ID, n), true
}
