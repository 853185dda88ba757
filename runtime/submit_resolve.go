package runtime

import (
	"context"
	"errors"

	"github.com/argo-retry/argo/internal/storage"
)

// A submit written leased for its first attempt (Immediate, a worker
// reserved) whose INSERT could not be settled before the caller's deadline
// keeps its reservation: the INSERT is run again in the background for up
// to LeaseDuration, and if the row turns out to exist it runs as its first
// attempt, as if the INSERT had answered at once, rather than waiting for its
// lease to run out and being charged a lease_expired attempt that never ran.

// endSubmitReservation gives back the reservation a submit took to run its
// first attempt at once (none if neither sync nor runNow).
func (rt *Runtime) endSubmitReservation(sync, runNow bool) {
	switch {
	case sync:
		rt.attempts.Done()
	case runNow:
		rt.unreserve(1)
	}
}

// confirmResolvedLease renews the lease of a row written leased whose
// existence was learnt by a resolution, or whose INSERT took long
// (submitLeaseAged): time has passed since its lease was written. It reports
// whether the row is still this instance's first attempt to run. If it was
// rescued meanwhile, or the database cannot say, it is left to the database.
func (rt *Runtime) confirmResolvedLease(callerCtx context.Context, t *Task) bool {
	ctx, cancel := storage.ResolveContext(callerCtx, storage.SubmitResolveFloor)
	defer cancel()
	until := toMillis(rt.now().Add(rt.cfg.LeaseDuration))
	ok, err := rt.store.ConfirmSubmitLease(ctx, t.ID, t.ShardKey, rt.cfg.InstanceID, until)
	if err != nil || !ok {
		rt.log.Warn("argo: submitted task persisted, but not run at once: its lease could not be renewed after its INSERT took long or its answer was lost", "task_id", t.ID, "task", t.Name, "error", err)
		return false
	}
	t.LeaseUntil = until
	return true
}

// resolveSubmitLater settles in the background a submit written leased whose
// outcome is unknown; it owns the submit's reservation.
func (rt *Runtime) resolveSubmitLater(t *Task, token []byte, h *TaskDef, sync bool) {
	go func() {
		ctx, cancel := context.WithTimeout(rt.ctx, rt.cfg.LeaseDuration)
		defer cancel()
		err := rt.store.ResolveInsert(ctx, t, token, errors.New("outcome unknown"))
		if err == nil && rt.confirmResolvedLease(ctx, t) {
			rt.log.Info("argo: a submit whose outcome was unknown turned out persisted; running its first attempt", "task_id", t.ID, "task", t.Name)
			rt.metricSubmitted(t.Name)
			_ = rt.run(context.Background(), t, h, sync, false)
			return
		}
		if err != nil {
			rt.log.Warn("argo: a submit whose outcome was unknown is still unknown; if it was written, it runs when its lease runs out", "task", t.Name, "error", err)
		}
		rt.endSubmitReservation(sync, true)
	}()
}
