package runtime

import (
	"context"
	"fmt"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
)

// ActionTransientFail is the operator trail's action of a transient-fail
// request (Inspector.TransientFail).
const ActionTransientFail = argotype.ActionTransientFail

// InjectedFailure is the error of an attempt failed by a transient-fail
// request instead of calling the function. It is transient: the task
// retries per its policy (unless Config.IsPermanent says otherwise).
type InjectedFailure struct {
	TaskID  int64
	Attempt int
}

func (e *InjectedFailure) Error() string {
	return fmt.Sprintf("%s by an operator's transient-fail (attempt %d of task %d): the function was not called", storage.InjectedFailurePrefix, e.Attempt, e.TaskID)
}

// TransientFail asks that the next attempt of task id fail as transient
// without calling its function (seed 001's run?transient_fail=true, a
// fault hook for tests and drills), with a reason (required) recorded in
// the trail. Each request fails one attempt: the next one to start, or the
// one after the attempt running now. Only instances started with
// Config.FaultInjection honour it; elsewhere the request waits, unused. A
// pending, blocked, running or retrying task takes it; others (nothing to
// come) are refused.
func (in *Inspector) TransientFail(ctx context.Context, id int64, reason string) error {
	return in.refused(ctx, in.store.RequestTransientFail(ctx, id, reason, in.operator(), toMillis(in.now())))
}

// runOrInject calls h's function for attempt t, or, with
// Config.FaultInjection, fails it with an *InjectedFailure when a
// transient-fail request of the task is pending (one read per attempt, only
// then). It sets *called just before it calls the function: an attempt
// whose lease lapsed here while the read waited for its answer never
// started, and is given back undone (run), not charged lease_expired.
func (rt *Runtime) runOrInject(ctx context.Context, t *Task, h *TaskDef, called *bool) error {
	args, err := rt.openTask(t) // cipher.go: a key missing is Undecodable
	if err != nil {
		return err
	}
	if rt.cfg.FaultInjection {
		n, err := rt.store.TransientFailsPending(ctx, t.ID)
		if err != nil {
			// Not knowing whether the operator asked for a failure, do not
			// call the downstream: fail this attempt as transient.
			return fmt.Errorf("argo: fault injection is on and the task's transient-fail requests could not be read; the function was not called: %w", err)
		}
		if n > 0 {
			return &InjectedFailure{TaskID: t.ID, Attempt: t.ExecuteTimes}
		}
	}
	*called = true
	return h.Run(ctx, args)
}
