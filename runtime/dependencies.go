package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
)

// Dependencies between calls (docs/dependencies.md): a call may run only
// after other tasks. It is written blocked, costs no claim polling, and
// becomes pending in the transaction in which its last upstream task
// succeeds (or recovers); when an upstream task ends dead or discarded, it
// and every task downstream of it end skipped, their error naming that task.

// ErrDependency matches every refused dependency (a cycle in a group, an
// upstream task unknown, dead, discarded or skipped); nothing was written.
var ErrDependency = argotype.ErrDependency

// GroupCall is one call of SubmitGroup: the Call (whose After lists
// existing tasks it runs after) and AfterCalls, the indices in the group of
// the calls it runs after.
type GroupCall struct {
	Call
	AfterCalls []int
}

// SubmitGroup persists calls and the dependencies among them (and on
// existing tasks, Call.After) in one transaction: all are written or none.
// A call with an upstream task not yet succeeded is written blocked; the
// others are due as Submit would make them, and are left to the poller
// (no first attempt runs in the caller's goroutine: Sync is treated as
// Async). A cycle, an index out of range, or an upstream task unknown,
// dead, discarded or skipped refuses the whole group with an error wrapping
// ErrNotPersisted and ErrDependency. A unique-key clash refuses the whole
// group (ErrDuplicate). It returns the ids in the order of calls. A COMMIT
// whose answer is lost is resolved as Submit's INSERT is, by the rows'
// submit tokens, until ctx's deadline and for at least
// storage.SubmitResolveFloor (5 s): nil if the group was written, an error
// wrapping ErrNotPersisted if it was not, ErrOutcomeUnknown if the database
// could not be reached to tell.
func (rt *Runtime) SubmitGroup(ctx context.Context, calls []GroupCall) ([]int64, error) {
	if len(calls) == 0 {
		return nil, notPersisted("?", errors.New("SubmitGroup needs at least one call"))
	}
	now := rt.now()
	tasks := make([]storage.DependentTask, len(calls))
	for i, gc := range calls {
		if gc.Task == nil {
			return nil, notPersisted("?", fmt.Errorf("call %d: Call.Task is nil", i))
		}
		p, err := rt.prepareCall(gc.Call)
		if err != nil {
			return nil, notPersisted(gc.Task.Name, fmt.Errorf("call %d: %w", i, err))
		}
		t := rt.newTask(gc.Call, p, now)
		if err := rt.stampAndSeal(ctx, gc.Call, t); err != nil {
			return nil, notPersisted(gc.Task.Name, fmt.Errorf("call %d: %w", i, err))
		}
		tasks[i] = storage.DependentTask{Task: t, After: gc.After, AfterCalls: gc.AfterCalls}
	}
	if err := rt.store.InsertDependent(ctx, tasks, toMillis(now)); err != nil {
		var unresolved *storage.UnresolvedError
		switch {
		case errors.Is(err, ErrDuplicate):
			return nil, err
		case errors.As(err, &unresolved):
			return nil, outcomeUnknown(calls[0].Task.Name, unresolved.Last)
		}
		return nil, notPersisted(calls[0].Task.Name, err)
	}
	ids := make([]int64, len(tasks))
	for i, dt := range tasks {
		ids[i] = dt.Task.ID
		rt.metricSubmitted(dt.Task.Name)
		if dt.Task.State == StatePending {
			rt.scheduleWake(dt.Task.ExecuteTime.Time())
		}
	}
	return ids, nil
}

// submitDependent is Submit of a call with Call.After: a group of one.
func (rt *Runtime) submitDependent(ctx context.Context, c Call) (int64, error) {
	ids, err := rt.SubmitGroup(ctx, []GroupCall{{Call: c}})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// TaskDependency is one end of a dependency as the Inspector shows it.
type TaskDependency struct {
	TaskID int64
	// State of that task; -1 when it was purged.
	State State
	// Settled: the edge recorded the upstream task's outcome (succeeded or
	// recovered, or dead or discarded); false while it has not finished.
	Settled bool
	// Failed: the upstream task ended dead or discarded.
	Failed bool
}

// TaskDependencies are a task's upstream tasks (it runs after them), its
// downstream tasks (they run after it), and why it waits or was skipped.
type TaskDependencies struct {
	Upstream, Downstream []TaskDependency
	// Why is, for a blocked task, the upstream tasks it still waits for;
	// for a skipped one, its error (naming the upstream task); else "".
	Why string
}

// Dependencies reads task id's upstream and downstream tasks.
func (in *Inspector) Dependencies(ctx context.Context, id int64) (TaskDependencies, error) {
	var out TaskDependencies
	t, err := in.store.Get(ctx, id)
	if err != nil {
		return out, err
	}
	ups, err := in.store.Upstream(ctx, id)
	if err != nil {
		return out, err
	}
	downs, err := in.store.Downstream(ctx, id)
	if err != nil {
		return out, err
	}
	var waiting []string
	for _, u := range ups {
		out.Upstream = append(out.Upstream, dependencyView(u))
		if u.Outcome == storage.UpstreamUnfinished {
			waiting = append(waiting, fmt.Sprintf("%d (%s)", u.TaskID, u.State))
		}
	}
	for _, d := range downs {
		out.Downstream = append(out.Downstream, dependencyView(d))
	}
	switch t.State {
	case StateBlocked:
		out.Why = "waits for upstream task " + strings.Join(waiting, ", ")
	case StateSkipped:
		out.Why = t.ErrorMsg
	}
	return out, nil
}

func dependencyView(d storage.Dependency) TaskDependency {
	return TaskDependency{TaskID: d.TaskID, State: d.State, Settled: d.Outcome != storage.UpstreamUnfinished, Failed: d.Outcome == storage.UpstreamFailed}
}
