package runtime

import (
	"context"
	"time"
)

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
