package maintenance

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// Heartbeater defaults.
const (
	// HeartbeaterIntervalDefault is how often the instance row is written.
	HeartbeaterIntervalDefault = 2 * time.Second
	// HeartbeaterInstanceTimeoutDefault: an instance that has not
	// heartbeated for this long is not live.
	HeartbeaterInstanceTimeoutDefault = 3 * HeartbeaterIntervalDefault
	// HeartbeaterRemoveTimeout bounds the removal of the row at Stop.
	HeartbeaterRemoveTimeout = 5 * time.Second
)

// heartbeatStore is what the heartbeater runs (*storage.Store).
type heartbeatStore interface {
	RecordInstanceSeen(ctx context.Context, id string, names, tenants []string, now storage.Millis, seen int64) (int64, error)
	LiveInstances(ctx context.Context, cutoff storage.Millis) ([]storage.Instance, error)
	RemoveInstance(ctx context.Context, id string) error
}

// HeartbeaterConfig is the heartbeater's configuration and dependencies.
type HeartbeaterConfig struct {
	// ID is this instance's id (required).
	ID string
	// Interval is how often the row is written. Default HeartbeaterIntervalDefault (2s).
	Interval time.Duration
	// InstanceTimeout: instances whose heartbeat is older are not live.
	// Default HeartbeaterInstanceTimeoutDefault (6s).
	InstanceTimeout time.Duration
	// Now is the database clock's time. Default time.Now.
	Now func() time.Time
	// Logger receives the warning of a row not removed at Stop. Default slog.Default().
	Logger *slog.Logger
	// Names returns the task names this instance has handlers for,
	// written with its row. Default: none.
	Names func() []string
	// Tenants are the tenants this instance is limited to, written with
	// its row. Default nil: every tenant.
	Tenants []string
	// Before, if set, runs first in every beat; its error ends the beat
	// (the database clock's reading rides on the heartbeat).
	Before func(ctx context.Context) error
	// Live, if set, receives every beat's result: the names written, and
	// the live instances (this one included if its write landed).
	Live func(names []string, live []storage.Instance)
	// CancelSeen, if set, is told (in the beat, before the live instances
	// are read) when the row's cancel_seq differs from the one the last
	// beat saw: a task running under one of this instance's leases was
	// cancelled (storage.RecordInstanceSeen; the runtime renews its
	// leases at once). Also told at the first beat of an instance whose
	// row was there with a non-zero count.
	CancelSeen func()
	// Failed is told of a failed beat (op "heartbeat").
	Failed func(op string, err error)
	// Probed is told of a beat that got through (the database answers).
	Probed func()
}

// Heartbeater keeps this instance in argo_instance, with the task names it
// runs, and hands the live instances to Live every Interval; Stop removes
// the row, so that the others take this instance's shards at once.
type Heartbeater struct {
	cfg   HeartbeaterConfig
	store heartbeatStore
	life  lifecycle
	// seen is the row's cancel_seq as the last beat read it.
	seen atomic.Int64
}

// NewHeartbeater returns a heartbeater over store.
func NewHeartbeater(store heartbeatStore, cfg HeartbeaterConfig) *Heartbeater {
	if cfg.Interval <= 0 {
		cfg.Interval = HeartbeaterIntervalDefault
	}
	if cfg.InstanceTimeout <= 0 {
		cfg.InstanceTimeout = HeartbeaterInstanceTimeoutDefault
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Names == nil {
		cfg.Names = func() []string { return nil }
	}
	if cfg.Failed == nil {
		cfg.Failed = func(string, error) {}
	}
	if cfg.Probed == nil {
		cfg.Probed = func() {}
	}
	return &Heartbeater{cfg: cfg, store: store, life: lifecycle{name: "heartbeater"}}
}

// Beat runs one heartbeat now: Before, the row, the live instances (Live).
// The runtime beats once before it claims anything, so that the first
// lease is on the database's clock and the shard split known.
func (h *Heartbeater) Beat(ctx context.Context) error {
	if h.cfg.Before != nil {
		if err := h.cfg.Before(ctx); err != nil {
			return err
		}
	}
	now := storage.ToMillis(h.cfg.Now())
	names := h.cfg.Names()
	seen := h.seen.Load()
	seq, err := h.store.RecordInstanceSeen(ctx, h.cfg.ID, names, h.cfg.Tenants, now, seen)
	if err != nil {
		return err
	}
	if seq != seen {
		h.seen.Store(seq)
		if h.cfg.CancelSeen != nil {
			h.cfg.CancelSeen()
		}
	}
	live, err := h.store.LiveInstances(ctx, now-storage.Millis(h.cfg.InstanceTimeout.Milliseconds()))
	if err != nil {
		return err
	}
	if h.cfg.Live != nil {
		h.cfg.Live(names, live)
	}
	return nil
}

// Start beats every Interval (the first after one Interval: see Beat)
// until Stop or until ctx ends.
func (h *Heartbeater) Start(ctx context.Context) error {
	_, err := h.life.start(ctx, h.loop)
	return err
}

// Stop ends the beats and removes this instance's row, waiting until ctx
// ends (and HeartbeaterRemoveTimeout at most for the removal).
func (h *Heartbeater) Stop(ctx context.Context) error {
	first, err := h.life.stop(ctx)
	if !first {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, HeartbeaterRemoveTimeout)
	defer cancel()
	// Leave at once so the others take our shards without waiting for the timeout.
	if rerr := h.store.RemoveInstance(rctx, h.cfg.ID); rerr != nil {
		h.cfg.Logger.Warn("argo: could not remove this instance from argo_instance; it will time out", "error", rerr)
	}
	return err
}

func (h *Heartbeater) loop(ctx context.Context) {
	for sleep(ctx, h.cfg.Interval, nil) {
		if err := h.Beat(ctx); err != nil {
			if ctx.Err() == nil {
				h.cfg.Failed("heartbeat", err)
			}
		} else {
			h.cfg.Probed()
		}
	}
}
