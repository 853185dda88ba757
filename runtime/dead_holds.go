package runtime

import (
	"context"
	"time"
)

// logDeadHolds logs, at Start, the retries held by instances that are gone
// (crashed, or killed without Stop): no instance runs them before their
// hold runs out, so this instance waits for them until then. One INFO line:
// how many, by which instances, and when the last hold runs out. Nothing is
// logged when there are none; a failed read is logged and Start goes on.
func (rt *Runtime) logDeadHolds(ctx context.Context) {
	now := rt.now()
	holds, err := rt.store.DeadHolds(ctx, rt.cfg.InstanceID, toMillis(now.Add(-rt.cfg.InstanceTimeout)), toMillis(now))
	if err != nil {
		rt.log.Warn("argo: could not read the retries held by instances that are gone", "error", err)
		return
	}
	if len(holds) == 0 {
		return
	}
	total, latest := 0, Millis(0)
	byOwner := map[string]int{}
	for _, h := range holds {
		total += h.Tasks
		latest = max(latest, h.Until)
		byOwner[h.Owner] = h.Tasks
	}
	rt.log.Info("argo: retries held by instances that are gone wait until their hold runs out; then any instance runs them",
		"tasks", total, "held_by", describeNameCounts(byOwner), "until", latest.Time().UTC().Format(time.RFC3339), "wait", latest.Time().Sub(now).Round(time.Second))
}
