package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// startLoops starts the background loops; each ends when rt.ctx is
// canceled, except the lease renewer, which Stop ends once nothing holds a
// lease any more (renewStop).
func (rt *Runtime) startLoops() {
	for _, loop := range []func(){rt.pollLoop, rt.holdLoop, rt.heartbeatLoop, rt.maintenanceLoop} {
		rt.loops.Add(1)
		go func() {
			defer rt.loops.Done()
			loop()
		}()
	}
	go func() {
		defer close(rt.renewDone)
		rt.renewLoop()
	}()
}

// sleep waits d or until the runtime stops; it reports whether to go on.
func (rt *Runtime) sleep(d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-rt.ctx.Done():
		return false
	case <-t.C:
	case <-wake:
	}
	return true
}

// pollLoop claims due tasks of this instance's shards while there are free
// workers, every PollInterval or when poked (a submit, a retry timer, a
// finished attempt).
func (rt *Runtime) pollLoop() {
	for {
		rt.claimAvailable()
		if !rt.sleep(rt.health.pollDelay(rt.cfg.PollInterval), rt.wake) {
			return
		}
	}
}

func (rt *Runtime) claimAvailable() {
	for rt.ctx.Err() == nil {
		batch := rt.cfg.ClaimBatch
		if now := rt.now(); rt.holds.anyDue(now) {
			// Due held retries take free workers first (holdLoop); the
			// poller claims only with the workers they leave. It does not
			// stand aside altogether: a hold loop whose start writes fail
			// or hang (an outage) would stop every claim meanwhile.
			rt.holds.signal()
			batch = min(batch, rt.workersLeftByHolds(now))
		}
		n := rt.reserve(batch)
		if n == 0 {
			return
		}
		now := rt.now()
		names := rt.handlerNames()
		tasks, err := rt.store.ClaimScoped(rt.ctx, rt.cfg.InstanceID, toMillis(now), toMillis(now), toMillis(now.Add(rt.cfg.LeaseDuration)), n, rt.shards.claimScope(names))
		if err == nil && len(tasks) < n && rt.cfg.StealAfter > 0 {
			// Spare workers: take tasks left overdue in other instances'
			// shards (a crashed owner not yet timed out, a busy one). A
			// failure here must not lose the tasks claimed above.
			stolen, serr := rt.store.ClaimScoped(rt.ctx, rt.cfg.InstanceID, toMillis(now), toMillis(now.Add(-rt.cfg.StealAfter)), toMillis(now.Add(rt.cfg.LeaseDuration)), n-len(tasks), []claimGroup{{Names: names}})
			if serr != nil && rt.ctx.Err() == nil {
				rt.health.failed(rt, "claim", serr)
			}
			tasks = append(tasks, stolen...)
		}
		rt.unreserve(n - len(tasks))
		if err != nil {
			if rt.ctx.Err() == nil {
				rt.health.failed(rt, "claim", err)
				rt.observe(func(o Observer) { o.ClaimError(err) })
			}
			return
		}
		rt.health.ok(rt)
		for _, t := range tasks {
			rt.goAttempt(t, rt.handler(t.Name), true)
		}
		if len(tasks) < n {
			return
		}
	}
}

// renewLoop extends the leases this instance holds every LeaseDuration/3,
// for as long as anyone holds them: it goes on after Stop begins, while
// attempts still run, and ends when Stop closes renewStop.
func (rt *Runtime) renewLoop() {
	tick := time.NewTicker(rt.cfg.LeaseDuration / 3)
	defer tick.Stop()
	for {
		select {
		case <-rt.renewStop:
			return
		case <-tick.C:
		}
		rt.renewLeases()
	}
}

// renewLeases extends every lease held and cancels the functions whose
// lease a renewal finds gone (rescued, or taken by another instance): their
// outcome is not written. A failed renewal (the database does not answer)
// loses nothing: the leases are renewed at the next tick, or expire.
func (rt *Runtime) renewLeases() {
	keys := rt.leases.list()
	if len(keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), rt.cfg.LeaseDuration/3)
	defer cancel()
	now := rt.now()
	lost, err := rt.store.ExtendLeases(ctx, rt.cfg.InstanceID, keys, toMillis(now.Add(rt.cfg.LeaseDuration)), toMillis(now))
	if err != nil {
		rt.health.failed(rt, "renew leases", err)
		return
	}
	for _, k := range lost {
		if r := rt.leases.lose(k); r != nil {
			rt.log.Warn("argo: lease lost (the task was rescued or taken by another instance): "+r.kind+" canceled, its outcome will not be recorded", "task_id", k.ID, "task", r.name, "attempt", k.Attempt)
		}
	}
}

// heartbeatLoop keeps this instance in argo_instance and its shard split current.
func (rt *Runtime) heartbeatLoop() {
	for rt.sleep(rt.cfg.HeartbeatInterval, nil) {
		if err := rt.heartbeat(rt.ctx); err != nil {
			if rt.ctx.Err() == nil {
				rt.health.failed(rt, "heartbeat", err)
			}
		} else {
			rt.health.probed(rt)
		}
	}
}

// maintenanceLoop runs on the one instance holding the "maintenance" role:
// it rescues expired leases every RescueInterval and purges old finished
// rows every MaintenanceInterval.
//
// The role is held for maintenanceTTL, renewed every RescueInterval, and
// handed over at once when the loop ends (Stop).
func (rt *Runtime) maintenanceLoop() {
	defer rt.releaseLeader("maintenance")
	ttl := maintenanceTTL(rt.cfg)
	var lastPurge time.Time
	for {
		lead, err := rt.leader(rt.ctx, "maintenance", ttl)
		if err != nil && rt.ctx.Err() == nil {
			rt.health.failed(rt, "leader election", err)
		}
		// Right after an outage every lease looks expired, because no one
		// could renew it: give live instances one LeaseDuration to renew
		// (and land the outcomes they kept) before rescuing.
		if lead && rt.health.settled(rt.cfg.LeaseDuration) {
			rt.rescueExpired(rt.ctx)
			rt.flagOrphans(rt.ctx)
			if rt.cfg.RetentionAge > 0 && time.Since(lastPurge) >= rt.cfg.MaintenanceInterval {
				lastPurge = time.Now()
				rt.purgeFinished(rt.ctx)
			}
		}
		if !rt.sleep(rt.cfg.RescueInterval, nil) {
			return
		}
	}
}

// maintenanceTTL is how long the maintenance role is held without renewal:
// max(InstanceTimeout, 3×RescueInterval), so that the holder, which renews
// it every RescueInterval, keeps it through two missed renewals, and a dead
// holder is replaced within that time.
func maintenanceTTL(cfg Config) time.Duration {
	return max(cfg.InstanceTimeout, 3*cfg.RescueInterval)
}

// rescueExpired takes back tasks whose lease expired (their instance died
// or hung): the attempt counts as failed, and the task goes on per its
// policy. A falling_back task goes back to exhausted to retry its fallback.
func (rt *Runtime) rescueExpired(ctx context.Context) int {
	rescued := 0
	for ctx.Err() == nil {
		now := rt.now()
		tasks, err := rt.store.ExpiredLeases(ctx, toMillis(now), 100)
		if err != nil {
			if ctx.Err() == nil {
				rt.health.failed(rt, "rescue", err)
			}
			return rescued
		}
		for _, t := range tasks {
			if rt.rescueOne(ctx, t, now) {
				rescued++
			}
		}
		if len(tasks) < 100 {
			return rescued
		}
	}
	return rescued
}

func (rt *Runtime) rescueOne(ctx context.Context, t *Task, now time.Time) bool {
	msg := fmt.Sprintf("lease of instance %s expired at %s (the instance stopped or hung); attempt %d counted as failed", t.LeaseOwner, t.LeaseUntil.Time().UTC().Format(time.RFC3339Nano), t.ExecuteTimes)
	hist := &Attempt{TaskPK: t.ID, Attempt: t.ExecuteTimes, Kind: "attempt", Worker: t.LeaseOwner, StartedAt: t.GmtModified, FinishedAt: toMillis(now), Outcome: OutcomeLeaseExpired, Error: msg}
	f := finishing{Fence: fence{ID: t.ID, Shard: t.ShardKey, Owner: t.LeaseOwner, Attempt: t.ExecuteTimes, From: t.State}, ErrMsg: &msg, History: hist}
	if t.State == StateFallingBack {
		hist.Kind = "fallback"
		f.To, f.Due = StateExhausted, toMillis(now)
	} else {
		pol, err := decodePolicy(t.RetryPolicyJSON)
		if err != nil {
			if h := rt.handler(t.Name); h != nil {
				pol = h.policy()
			} else {
				pol = DefaultRetryPolicy()
			}
		}
		if pol.Exhausted(t.ExecuteTimes) {
			f.To, f.Due = StateExhausted, toMillis(now)
		} else {
			d := pol.Delay(t.ID, t.ExecuteTimes)
			hist.BackoffMs = d.Milliseconds()
			f.To, f.Due = StateRetrying, toMillis(now.Add(d))
		}
	}
	err := rt.store.Rescue(ctx, f, t.LeaseUntil, toMillis(now))
	if errors.Is(err, ErrLeaseLost) {
		return false // renewed or finished meanwhile: the worker won
	}
	if err != nil {
		rt.log.Error("argo: lease rescue failed", "task_id", t.ID, "error", err)
		return false
	}
	rt.log.Warn("argo: rescued expired lease", "task_id", t.ID, "task", t.Name, "attempt", t.ExecuteTimes, "shard", t.ShardKey, "owner", t.LeaseOwner, "next", f.To)
	rt.observe(func(o Observer) { o.LeaseRescued(t.Name) })
	if h := rt.handler(t.Name); h != nil && t.State == StateRunning {
		pol, _ := decodePolicy(t.RetryPolicyJSON)
		rt.checkAlert(h, t, pol, msg, false, f.To == StateRetrying)
	}
	rt.scheduleWake(f.Due.Time())
	return true
}

// flagOrphans marks due tasks that no live instance has a handler for, so
// that their rows say why they wait. Claims only take registered names, so
// such tasks are never run, given back or counted: they simply wait.
func (rt *Runtime) flagOrphans(ctx context.Context) {
	now := rt.now()
	known, live, err := rt.store.KnownTaskNames(ctx, toMillis(now.Add(-rt.cfg.InstanceTimeout)))
	if err != nil {
		return
	}
	flagged, err := rt.store.FlagOrphans(ctx, known, live, toMillis(now.Add(-rt.cfg.UnknownTaskDelay)), toMillis(now), 100)
	if err != nil && ctx.Err() == nil {
		// Like every other statement: an unreachable database is one
		// outage, logged once (TestDatabaseOutage saw this ERROR when the
		// server went down mid-statement).
		rt.health.failed(rt, "flag tasks without a handler", err)
	}
	if len(flagged) > 0 {
		counts := map[string]int{}
		for _, name := range flagged {
			counts[name]++
		}
		rt.log.Error("argo: due tasks have no handler on any live instance; they wait", "tasks", len(flagged), "names", describeNameCounts(counts), "instances", len(live))
	}
}

// purgeFinished deletes succeeded, recovered and discarded rows older than
// RetentionAge, in batches of PurgeBatch, pausing between batches.
func (rt *Runtime) purgeFinished(ctx context.Context) int {
	cutoff := toMillis(rt.now().Add(-rt.cfg.RetentionAge))
	total := 0
	for ctx.Err() == nil {
		n, err := rt.store.Purge(ctx, cutoff, rt.cfg.PurgeBatch)
		total += n
		if err != nil {
			if ctx.Err() == nil {
				rt.log.Error("argo: retention purge failed", "error", err)
			}
			break
		}
		if n < rt.cfg.PurgeBatch {
			break
		}
		if !rt.sleep(10*time.Millisecond, nil) {
			break
		}
	}
	if total > 0 {
		rt.log.Info("argo: purged finished tasks", "rows", total, "older_than", rt.cfg.RetentionAge)
	}
	return total
}
