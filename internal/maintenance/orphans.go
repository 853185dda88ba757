package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// Orphan flagger defaults.
const (
	// OrphanFlaggerIntervalDefault is how often due tasks are checked for a handler.
	OrphanFlaggerIntervalDefault = 10 * time.Second
	// OrphanFlaggerAfterDefault is how long a task must have been due before
	// it is flagged (the runtime passes its UnknownTaskDelay).
	OrphanFlaggerAfterDefault = 30 * time.Second
	// OrphanFlaggerInstanceTimeoutDefault is how recent a heartbeat must be
	// for its instance's names to count.
	OrphanFlaggerInstanceTimeoutDefault = 6 * time.Second
	// OrphanFlaggerBatchDefault bounds the rows flagged per pass.
	OrphanFlaggerBatchDefault = 100
)

// orphanStore is what the orphan flagger runs (*storage.Store).
type orphanStore interface {
	KnownTaskNames(ctx context.Context, cutoff storage.Millis) (names, live []string, err error)
	FlagOrphans(ctx context.Context, known []string, live []string, cutoff, now storage.Millis, limit int) (flagged []string, err error)
}

// OrphanFlaggerConfig is the orphan flagger's configuration and dependencies.
type OrphanFlaggerConfig struct {
	// Interval is how often it looks. Default OrphanFlaggerIntervalDefault (10s).
	Interval time.Duration
	// After is how long a task must have been due to be flagged. Default
	// OrphanFlaggerAfterDefault (30s).
	After time.Duration
	// InstanceTimeout: instances that have not heartbeated for this long
	// are not live. Default OrphanFlaggerInstanceTimeoutDefault (6s).
	InstanceTimeout time.Duration
	// Batch bounds the rows flagged per pass. Default OrphanFlaggerBatchDefault (100).
	Batch int
	// Now is the database clock's time. Default time.Now.
	Now func() time.Time
	// Logger receives the ERROR naming the flagged tasks. Default slog.Default().
	Logger *slog.Logger
	// Leading reports whether this instance may run it now (holds the
	// maintenance role, the database settled). Default: always.
	Leading func() bool
	// Failed is told of a failed statement (op "flag tasks without a handler").
	Failed func(op string, err error)
}

// OrphanFlagger marks due tasks that no live instance has a handler for,
// so that their rows say why they wait. Claims only take registered names,
// so such tasks are never run, given back or counted: they simply wait.
//
// Start flags now (if it may) and then once per Interval until Stop;
// Wake makes it look at once (the periodic runner).
type OrphanFlagger struct {
	periodic
	cfg   OrphanFlaggerConfig
	store orphanStore
}

// NewOrphanFlagger returns an orphan flagger over store.
func NewOrphanFlagger(store orphanStore, cfg OrphanFlaggerConfig) *OrphanFlagger {
	if cfg.Interval <= 0 {
		cfg.Interval = OrphanFlaggerIntervalDefault
	}
	if cfg.After <= 0 {
		cfg.After = OrphanFlaggerAfterDefault
	}
	if cfg.InstanceTimeout <= 0 {
		cfg.InstanceTimeout = OrphanFlaggerInstanceTimeoutDefault
	}
	if cfg.Batch <= 0 {
		cfg.Batch = OrphanFlaggerBatchDefault
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
	if cfg.Failed == nil {
		cfg.Failed = func(string, error) {}
	}
	o := &OrphanFlagger{cfg: cfg, store: store}
	o.periodic = newPeriodic("orphan flagger", cfg.Interval, cfg.Leading, func(ctx context.Context) { o.flag(ctx) })
	return o
}

// flag flags one batch and returns the names of the rows it flagged.
func (o *OrphanFlagger) flag(ctx context.Context) []string {
	now := o.cfg.Now()
	known, live, err := o.store.KnownTaskNames(ctx, storage.ToMillis(now.Add(-o.cfg.InstanceTimeout)))
	if err != nil || len(live) == 0 {
		// No live instance: not even this one's heartbeat is recent (its
		// first not yet written, or late under load), so no name is known
		// and every due task would be flagged, its last error overwritten.
		// Nothing can be judged until a heartbeat lands.
		return nil
	}
	flagged, err := o.store.FlagOrphans(ctx, known, live, storage.ToMillis(now.Add(-o.cfg.After)), storage.ToMillis(now), o.cfg.Batch)
	if err != nil && ctx.Err() == nil {
		// Like every other statement: an unreachable database is one
		// outage, logged once (TestDatabaseOutage saw this ERROR when the
		// server went down mid-statement).
		o.cfg.Failed("flag tasks without a handler", err)
	}
	if len(flagged) > 0 {
		counts := map[string]int{}
		for _, name := range flagged {
			counts[name]++
		}
		o.cfg.Logger.Error("argo: due tasks have no handler on any live instance; they wait", "tasks", len(flagged), "names", describeNameCounts(counts), "instances", len(live))
	}
	return flagged
}
