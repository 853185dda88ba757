package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// BlockedSweeper defaults.
const (
	// BlockedSweepIntervalDefault is how often a sweep pass runs.
	BlockedSweepIntervalDefault = 30 * time.Second
	// BlockedSweepGraceDefault is how long a blocked row is left alone
	// after it was last modified (a release in flight settles it).
	BlockedSweepGraceDefault = 30 * time.Second
	// BlockedSweepBatchDefault bounds the blocked rows one read returns.
	BlockedSweepBatchDefault = 500
	// BlockedSweepBatchesDefault bounds the reads of one pass.
	BlockedSweepBatchesDefault = 10
)

// LostReleaseMessage is the message the sweeper logs (at Warn, with the
// count as "tasks") when a pass settled blocked tasks: each is a
// dependency release that was lost (the fault checker watches for it).
const LostReleaseMessage = "argo: released or skipped blocked tasks whose upstream tasks had all ended (a lost dependency release)"

// blockedStore is what the sweeper runs (*storage.Store).
type blockedStore interface {
	BlockedBatch(ctx context.Context, before storage.Millis, after storage.BlockedCursor, limit int) ([]storage.BlockedCursor, error)
	SettleBlocked(ctx context.Context, ids []int64, now storage.Millis) (int, error)
}

// BlockedSweeperConfig is the sweeper's configuration and dependencies.
type BlockedSweeperConfig struct {
	// Interval is how often a pass runs. Default BlockedSweepIntervalDefault (30s).
	Interval time.Duration
	// Grace: rows modified less than Grace ago (database clock) are not
	// read. Default BlockedSweepGraceDefault (30s).
	Grace time.Duration
	// Batch bounds the rows one read returns. Default BlockedSweepBatchDefault (500).
	Batch int
	// Batches bounds the reads of one pass. Default BlockedSweepBatchesDefault (10).
	Batches int
	// Now is the database clock's time. Default time.Now.
	Now func() time.Time
	// Logger receives what was settled, and failures. Default slog.Default().
	Logger *slog.Logger
	// Leading reports whether this instance may run it now (holds the
	// maintenance role, the database settled). Default: always.
	Leading func() bool
}

// BlockedSweeper is the backstop of dependency releases
// (docs/dependencies.md): a blocked task is released or skipped by the
// transaction that settles its last upstream task, and where that step is
// lost (two settles on two nodes of a multi-writer Galera cluster that
// both committed, a dependent submit racing its upstream task's finish on
// another node) the sweeper settles it. Each pass reads up to Batches
// batches of Batch blocked rows last modified at least Grace ago, in
// (gmt_modified, id) order from where the last pass stopped (the start
// again once a read comes back short), and settles those whose upstream
// tasks have all ended (storage.Store.SettleBlocked). It runs on the
// instance that holds the maintenance role.
//
// The bound: with B rows blocked for longer than Grace, a pass reads them
// all while B < Batch×Batches (5000 by default), so a lost release is
// settled within Grace + Interval of its last upstream task's end or of
// its submit, whichever is later; with more, within
// Grace + (2⌈B/(Batch×Batches)⌉ + 1)×Interval.
// (A change of the role's holder adds up to its TTL.) It costs one read
// of at most Batch blocked rows and their edges per batch, and nothing per
// task without dependencies.
//
// Start runs a pass now (if it may) and then once per Interval until
// Stop; Wake runs one at once (the periodic runner).
type BlockedSweeper struct {
	periodic
	cfg    BlockedSweeperConfig
	store  blockedStore
	cursor storage.BlockedCursor // the loop's own
}

// NewBlockedSweeper returns a sweeper over store.
func NewBlockedSweeper(store blockedStore, cfg BlockedSweeperConfig) *BlockedSweeper {
	if cfg.Interval <= 0 {
		cfg.Interval = BlockedSweepIntervalDefault
	}
	if cfg.Grace <= 0 {
		cfg.Grace = BlockedSweepGraceDefault
	}
	if cfg.Batch <= 0 {
		cfg.Batch = BlockedSweepBatchDefault
	}
	if cfg.Batches <= 0 {
		cfg.Batches = BlockedSweepBatchesDefault
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
	b := &BlockedSweeper{cfg: cfg, store: store}
	b.periodic = newPeriodic("blocked sweeper", cfg.Interval, cfg.Leading, func(ctx context.Context) { b.pass(ctx) })
	return b
}

// pass reads up to Batches batches from the cursor and settles what it
// can, and returns how many tasks it settled.
func (b *BlockedSweeper) pass(ctx context.Context) int {
	now := b.cfg.Now()
	before := storage.ToMillis(now.Add(-b.cfg.Grace))
	total := 0
	for range b.cfg.Batches {
		batch, err := b.store.BlockedBatch(ctx, before, b.cursor, b.cfg.Batch)
		if err != nil {
			if ctx.Err() == nil {
				b.cfg.Logger.Error("argo: reading blocked tasks failed", "error", err)
			}
			return total
		}
		ids := make([]int64, len(batch))
		for i, r := range batch {
			ids[i] = r.ID
		}
		n, err := b.store.SettleBlocked(ctx, ids, storage.ToMillis(now))
		total += n
		if err != nil {
			if ctx.Err() == nil {
				b.cfg.Logger.Error("argo: settling blocked tasks failed", "error", err)
			}
			break // the cursor stays: the next pass reads the batch again
		}
		if len(batch) < b.cfg.Batch {
			b.cursor = storage.BlockedCursor{} // the end: start again next pass
			break
		}
		b.cursor = batch[len(batch)-1]
	}
	if total > 0 {
		b.cfg.Logger.Warn(LostReleaseMessage, "tasks", total)
	}
	return total
}
