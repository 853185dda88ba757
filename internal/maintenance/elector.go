package maintenance

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// MaintenanceRole is the role whose holder runs the rescuer, the orphan
// flagger and the purger.
const MaintenanceRole = "maintenance"

// Elector defaults.
const (
	// ElectorIntervalDefault is how often the role is taken or renewed.
	ElectorIntervalDefault = 10 * time.Second
	// ElectorReleaseTimeout bounds the hand-over at Stop.
	ElectorReleaseTimeout = 5 * time.Second
)

// MaintenanceRoleTTL is how long the maintenance role is held without
// renewal: max(instanceTimeout, 3×rescueInterval), so that the holder,
// which renews it every rescueInterval, keeps it through two missed
// renewals, and a dead holder is replaced within that time.
func MaintenanceRoleTTL(instanceTimeout, rescueInterval time.Duration) time.Duration {
	return max(instanceTimeout, 3*rescueInterval)
}

// leaderStore is what the elector runs (*storage.Store).
type leaderStore interface {
	TryLead(ctx context.Context, name, holder string, now, expiresAt storage.Millis) (bool, error)
	ReleaseLeader(ctx context.Context, name, holder string) error
}

// ElectorConfig is the elector's configuration and dependencies.
type ElectorConfig struct {
	// Role is the role's name in argo_leader. Default MaintenanceRole.
	Role string
	// Holder is this instance's id (required).
	Holder string
	// Interval is how often the role is taken or renewed. Default
	// ElectorIntervalDefault (10s).
	Interval time.Duration
	// TTL is how long the role is held without renewal. Default
	// MaintenanceRoleTTL(0, Interval) = 3×Interval.
	TTL time.Duration
	// Now is the database clock's time. Default time.Now.
	Now func() time.Time
	// Logger receives the warning of a failed hand-over. Default slog.Default().
	Logger *slog.Logger
	// Failed is told of a failed take or renewal (op "leader election").
	Failed func(op string, err error)
	// Gained, if set, is called when the role is taken (not when it is
	// renewed): the services that run on the holder are woken with it.
	Gained func()
}

// Elector holds a role (one instance at a time, chosen through argo_leader)
// for as long as it runs: it asks for the role at Start and every Interval,
// each time for TTL, and hands it over at Stop (or when Start's context
// ends), so that the next instance to ask takes it without waiting for it
// to expire.
type Elector struct {
	cfg   ElectorConfig
	store leaderStore
	life  lifecycle

	mu    sync.Mutex
	until time.Time // the role is held until then (database clock); zero: not held
}

// NewElector returns an elector for cfg.Role over store.
func NewElector(store leaderStore, cfg ElectorConfig) *Elector {
	if cfg.Role == "" {
		cfg.Role = MaintenanceRole
	}
	if cfg.Interval <= 0 {
		cfg.Interval = ElectorIntervalDefault
	}
	if cfg.TTL <= 0 {
		cfg.TTL = MaintenanceRoleTTL(0, cfg.Interval)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Failed == nil {
		cfg.Failed = func(string, error) {}
	}
	return &Elector{cfg: cfg, store: store, life: lifecycle{name: "leader elector (" + cfg.Role + ")"}}
}

// Start asks for the role now and every Interval until Stop.
func (e *Elector) Start(ctx context.Context) error {
	_, err := e.life.start(ctx, e.loop)
	return err
}

// Stop ends the elector and hands the role over, waiting until ctx ends.
func (e *Elector) Stop(ctx context.Context) error {
	_, err := e.life.stop(ctx)
	return err
}

// Leading reports whether this instance holds the role now: its last take
// or renewal succeeded and has not expired on the database's clock.
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cfg.Now().Before(e.until)
}

func (e *Elector) loop(ctx context.Context) {
	defer e.release()
	for {
		e.ask(ctx)
		if !sleep(ctx, e.cfg.Interval, nil) {
			return
		}
	}
}

// ask takes or renews the role for TTL.
func (e *Elector) ask(ctx context.Context) {
	now := e.cfg.Now()
	until := now.Add(e.cfg.TTL)
	lead, err := e.store.TryLead(ctx, e.cfg.Role, e.cfg.Holder, storage.ToMillis(now), storage.ToMillis(until))
	if err != nil && ctx.Err() == nil {
		e.cfg.Failed("leader election", err)
	}
	e.mu.Lock()
	gained := lead && !now.Before(e.until)
	if lead {
		e.until = until
	} else {
		e.until = time.Time{} // another holds it, or the answer is unknown
	}
	e.mu.Unlock()
	if gained && e.cfg.Gained != nil {
		e.cfg.Gained()
	}
}

// release hands the role over at once, if this instance holds it.
func (e *Elector) release() {
	e.mu.Lock()
	e.until = time.Time{}
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), ElectorReleaseTimeout)
	defer cancel()
	if err := e.store.ReleaseLeader(ctx, e.cfg.Role, e.cfg.Holder); err != nil {
		e.cfg.Logger.Warn("argo: could not hand over the role; another instance takes it when it expires", "role", e.cfg.Role, "error", err)
	}
}
