package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/argo-retry/argo/internal/maintenance"
	"github.com/argo-retry/argo/internal/storage"
)

// The runtime's background services (internal/maintenance): each gets the
// store, the database clock (rt.now), the logger, its settings from Config
// and callbacks into the runtime; none holds the Runtime.

// completerDrainTimeout bounds the writing of the outcomes still queued in
// the completer once every attempt has returned.
const completerDrainTimeout = 30 * time.Second

// maintenanceTTL is how long the maintenance role is held without renewal:
// max(InstanceTimeout, 3×RescueInterval) (maintenance.MaintenanceRoleTTL).
func maintenanceTTL(cfg Config) time.Duration {
	return maintenance.MaintenanceRoleTTL(cfg.InstanceTimeout, cfg.RescueInterval)
}

// blockedSweepInterval is how often the blocked sweeper runs a pass:
// 3×RescueInterval (LeaseDuration by default, 30s). A lost release is
// settled within LeaseDuration + blockedSweepInterval (1m by default)
// while at most 5000 tasks are blocked (maintenance.BlockedSweeper).
func blockedSweepInterval(cfg Config) time.Duration { return 3 * cfg.RescueInterval }

// newServices builds the services from rt.cfg; nothing runs yet.
func (rt *Runtime) newServices() {
	cfg, st := rt.cfg, rt.store
	failed := func(op string, err error) { rt.health.failed(rt, op, err) }
	rt.leases.setup(cfg.LeaseDuration-leaseStopMargin(cfg.LeaseDuration), rt.leaseLapsed)
	rt.completer = maintenance.NewCompleter(st, maintenance.CompleterConfig{Now: rt.now})
	rt.holds = maintenance.NewHeldRetries(st, maintenance.HeldRetriesConfig[*TaskDef]{
		Owner: cfg.InstanceID, Hold: cfg.RetryHold, LeaseDuration: cfg.LeaseDuration,
		InstanceTimeout: cfg.InstanceTimeout, MaxStarting: max(cfg.ClaimBatch, 2*cfg.Workers),
		Now: rt.now, Logger: rt.log,
		Register: rt.register, Unregister: rt.unregister, Run: rt.runWhenFree,
		Failed: failed, Answered: func() { rt.health.ok(rt) },
	})
	rt.heartbeater = maintenance.NewHeartbeater(st, maintenance.HeartbeaterConfig{
		ID: cfg.InstanceID, Interval: cfg.HeartbeatInterval, InstanceTimeout: cfg.InstanceTimeout,
		Now: rt.now, Logger: rt.log, Names: rt.handlerNames, Tenants: cfg.Tenants,
		Before: rt.measureClock, Live: rt.updateShards, CancelSeen: rt.renewNow,
		Failed: failed, Probed: func() { rt.health.probed(rt) },
	})
	rt.rescuer = maintenance.NewRescuer(st, maintenance.RescuerConfig{
		Interval: cfg.RescueInterval, Settle: cfg.LeaseDuration, Grace: rescueGrace(cfg.LeaseDuration),
		Now: rt.now, Logger: rt.log, UpSince: rt.health.upSince,
		Leading: func() bool { return rt.elector.Leading() },
		Policy:  rt.rescuePolicy, Rescued: rt.rescued, Failed: failed,
		Next: rt.rescueNext,
	})
	// The rescuer, the flagger and the purger run on the holder of the
	// maintenance role (the elector, built last), once the database has
	// settled after an outage (the rescuer's rule).
	leadingSettled := func() bool { return rt.elector.Leading() && rt.rescuer.Settled() }
	rt.flagger = maintenance.NewOrphanFlagger(st, maintenance.OrphanFlaggerConfig{
		Interval: cfg.RescueInterval, After: cfg.UnknownTaskDelay, InstanceTimeout: cfg.InstanceTimeout,
		Now: rt.now, Logger: rt.log, Leading: leadingSettled, Failed: failed,
	})
	rt.purger = maintenance.NewPurger(st, maintenance.PurgerConfig{
		Retention: cfg.RetentionAge, Interval: cfg.MaintenanceInterval, CheckInterval: cfg.RescueInterval,
		Batch: cfg.PurgeBatch, Now: rt.now, Logger: rt.log, Leading: leadingSettled,
	})
	// The backstop of dependency releases (docs/dependencies.md): a pass
	// every 3×RescueInterval over rows blocked for LeaseDuration or more.
	rt.blocked = maintenance.NewBlockedSweeper(st, maintenance.BlockedSweeperConfig{
		Interval: blockedSweepInterval(cfg), Grace: cfg.LeaseDuration,
		Now: rt.now, Logger: rt.log, Leading: leadingSettled,
	})
	rt.elector = maintenance.NewElector(st, maintenance.ElectorConfig{
		Role: maintenance.MaintenanceRole, Holder: cfg.InstanceID,
		Interval: cfg.RescueInterval, TTL: maintenanceTTL(cfg),
		Now: rt.now, Logger: rt.log, Failed: failed,
		Gained: func() { rt.rescuer.Wake(); rt.flagger.Wake(); rt.purger.Wake(); rt.blocked.Wake() },
	})
}

// startServices starts the services that run until Stop (the completer
// and the heartbeater's first beat come earlier, in Start). Each ends
// when rt.ctx does.
func (rt *Runtime) startServices() error {
	return errors.Join(
		rt.holds.Start(rt.ctx),
		rt.heartbeater.Start(rt.ctx),
		rt.elector.Start(rt.ctx),
		rt.rescuer.Start(rt.ctx),
		rt.flagger.Start(rt.ctx),
		rt.purger.Start(rt.ctx),
		rt.blocked.Start(rt.ctx),
	)
}

// stopServices waits, once rt.ctx has ended, for the services that end
// with it: the held retries (given back), the role (handed over), the
// rescuer, the flagger and the purger. Each has its own bound on what it
// still writes (maintenance.HeldGiveBackTimeout, HeldStartTimeout,
// ElectorReleaseTimeout). The heartbeater (its row removed) and the
// completer (drained) stop later, in Stop's order.
func (rt *Runtime) stopServices() {
	ctx := context.Background()
	for _, stop := range []func(context.Context) error{rt.holds.Stop, rt.elector.Stop, rt.rescuer.Stop, rt.flagger.Stop, rt.purger.Stop, rt.blocked.Stop} {
		if err := stop(ctx); err != nil {
			rt.log.Warn("argo: Stop: a maintenance service did not stop", "error", err)
		}
	}
}

// rescuePolicy is the retry policy of a rescued task: the one stored with
// it, else its handler's, else the default.
func (rt *Runtime) rescuePolicy(t *Task) RetryPolicy {
	pol, err := decodePolicy(t.RetryPolicyJSON)
	if err == nil {
		return pol
	}
	if h := rt.handler(t.Name); h != nil {
		return h.policy()
	}
	return DefaultRetryPolicy()
}

// rescued is told of each rescue the rescuer wrote: the observer, the
// task's alert (for an attempt rescued), and the poller's wake at its due time.
func (rt *Runtime) rescued(t *Task, f storage.Finishing) {
	rt.observe(func(o Observer) { o.LeaseRescued(t.Name) })
	if h := rt.handler(t.Name); h != nil && t.State == StateRunning {
		pol, _ := decodePolicy(t.RetryPolicyJSON)
		rt.checkAlert(h, t, pol, *f.ErrMsg, false, f.To == StateRetrying)
	}
	rt.scheduleWake(f.Due.Time())
}
