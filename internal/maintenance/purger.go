package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// Purger defaults.
const (
	// PurgerIntervalDefault is how often the purge runs.
	PurgerIntervalDefault = time.Minute
	// PurgerCheckIntervalDefault is how often the purger asks whether it
	// may run (holds the role) and its Interval has passed.
	PurgerCheckIntervalDefault = 10 * time.Second
	// PurgerBatchDefault bounds the rows one DELETE removes.
	PurgerBatchDefault = 1000
	// PurgerPause is the pause between two batches of one purge.
	PurgerPause = 10 * time.Millisecond
)

// purgeStore is what the purger runs (*storage.Store).
type purgeStore interface {
	Purge(ctx context.Context, cutoff storage.Millis, limit int) (int, error)
}

// PurgerConfig is the purger's configuration and dependencies.
type PurgerConfig struct {
	// Retention is how long finished rows are kept; zero or less disables
	// the purge (Start does nothing).
	Retention time.Duration
	// Interval is how often the purge runs. Default PurgerIntervalDefault (1m).
	Interval time.Duration
	// CheckInterval is how often the purger asks whether it may run.
	// Default PurgerCheckIntervalDefault (10s).
	CheckInterval time.Duration
	// Batch bounds the rows one DELETE removes. Default PurgerBatchDefault (1000).
	Batch int
	// Now is the database clock's time. Default time.Now.
	Now func() time.Time
	// Logger receives what was purged, and failures. Default slog.Default().
	Logger *slog.Logger
	// Leading reports whether this instance may run it now (holds the
	// maintenance role, the database settled). Default: always.
	Leading func() bool
}

// Purger deletes succeeded, recovered and discarded rows (and their
// attempt rows) older than Retention, in batches of Batch with PurgerPause
// between them, at most once per Interval, on the instance that holds the
// maintenance role. It asks whether it may every CheckInterval, and Wake
// makes it ask at once (the periodic runner).
type Purger struct {
	periodic
	cfg   PurgerConfig
	store purgeStore
}

// NewPurger returns a purger over store.
func NewPurger(store purgeStore, cfg PurgerConfig) *Purger {
	if cfg.Interval <= 0 {
		cfg.Interval = PurgerIntervalDefault
	}
	if cfg.CheckInterval <= 0 {
		cfg.CheckInterval = PurgerCheckIntervalDefault
	}
	if cfg.Batch <= 0 {
		cfg.Batch = PurgerBatchDefault
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
	p := &Purger{cfg: cfg, store: store}
	p.periodic = newPeriodic("purger", cfg.CheckInterval, cfg.Leading, func(ctx context.Context) { p.purge(ctx) })
	p.every = cfg.Interval
	return p
}

// Start purges now (if it may) and then once per Interval, until Stop.
// With Retention zero or less it does nothing.
func (p *Purger) Start(ctx context.Context) error {
	if p.cfg.Retention <= 0 {
		return nil
	}
	return p.periodic.Start(ctx)
}

// purge deletes what is past retention and returns how many rows it deleted.
func (p *Purger) purge(ctx context.Context) int {
	cutoff := storage.ToMillis(p.cfg.Now().Add(-p.cfg.Retention))
	total := 0
	for ctx.Err() == nil {
		n, err := p.store.Purge(ctx, cutoff, p.cfg.Batch)
		total += n
		if err != nil {
			if ctx.Err() == nil {
				p.cfg.Logger.Error("argo: retention purge failed", "error", err)
			}
			break
		}
		if n < p.cfg.Batch || !sleep(ctx, PurgerPause, nil) {
			break
		}
	}
	if total > 0 {
		p.cfg.Logger.Info("argo: purged finished tasks", "rows", total, "older_than", p.cfg.Retention)
	}
	return total
}
