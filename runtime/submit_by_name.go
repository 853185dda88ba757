package runtime

import (
	"errors"
	"fmt"
)

// ErrUnregisteredTask is wrapped (with ErrNotPersisted) by a submit whose
// TaskDef is only a Name (a submit by name) that this runtime has not
// registered: argo cannot know the task's policy, mode or fallback.
var ErrUnregisteredTask = errors.New("task name not registered")

// byName reports whether d is only a Name: a reference to the definition
// registered under that name, as in Call{Task: &TaskDef{Name: "x"}}.
func (d *TaskDef) byName() bool {
	return d.MethodName == "" && d.Signature == "" && d.ParameterTypes == "" && d.Mode == 0 && d.Thread == 0 &&
		d.Delay == 0 && d.Policy == (RetryPolicy{}) && d.Run == nil && d.Fallback == nil && d.FallbackName == "" &&
		d.Alert == "" && d.AlertAction == nil && d.AlertActionName == "" && len(d.AlertChannels) == 0 && d.Flow == nil
}

// resolveDef returns the definition a call of d stores: the registered one
// when d is only its Name (seed 004's submitTask(taskType, payload)), else
// d. It refuses a bare name not registered here, and a definition that gives
// no Policy (argo's default) for a name registered with another policy: in
// both cases the stored row would not say what the handler was declared
// with.
func (rt *Runtime) resolveDef(d *TaskDef) (*TaskDef, error) {
	h := rt.handler(d.Name)
	switch {
	case h == d:
		return d, nil
	case d.byName() && h == nil:
		return nil, fmt.Errorf("%w: a TaskDef with only a Name submits the definition registered under that name, and this runtime has none: Register the TaskDef (with its Run) before submitting by name, or submit the full TaskDef with its Policy (runtime.DefaultRetryPolicy() for argo's default) from an instance that does not run it", ErrUnregisteredTask)
	case d.byName():
		return h, nil
	case h != nil && d.Policy == (RetryPolicy{}) && encodePolicy(d.policy()) != encodePolicy(h.policy()):
		return nil, fmt.Errorf("the TaskDef gives no Policy (argo's default, %d attempts) but the definition registered under its name has %d attempts (%s): submit the registered TaskDef, a TaskDef with only the Name, or give the Policy explicitly",
			d.policy().MaxAttempts, h.policy().MaxAttempts, encodePolicy(h.policy()))
	}
	return d, nil
}
