package main

import (
	"fmt"
	"strings"

	"github.com/argo-retry/argo/runtime"
)

// What argoctl show tells about a task's dependencies (migration 000007):
// the tasks it runs after, the tasks that run after it, and why it waits
// or was skipped.

// dependencyList renders edges as "12 (succeeded), 15 (running)".
func dependencyList(ds []runtime.TaskDependency) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		state := "purged"
		if d.State >= 0 {
			state = d.State.String()
		}
		parts[i] = fmt.Sprintf("%d (%s)", d.TaskID, state)
	}
	return strings.Join(parts, ", ")
}

// writeDependencyFields adds upstream, downstream and why to show's fields.
func writeDependencyFields(d runtime.TaskDependencies, field func(string, any)) {
	field("runs after", dependencyList(d.Upstream))
	field("runs before", dependencyList(d.Downstream))
	field("why", d.Why)
}

// dependencyJSON is the dependencies in show -o json.
type dependencyJSON struct {
	Upstream   []dependencyEdgeJSON `json:"upstream,omitempty"`
	Downstream []dependencyEdgeJSON `json:"downstream,omitempty"`
	Why        string               `json:"dependency_why,omitempty"`
}

type dependencyEdgeJSON struct {
	TaskID int64  `json:"task_id"`
	State  string `json:"state"`
}

func toDependencyJSON(d runtime.TaskDependencies) dependencyJSON {
	j := dependencyJSON{Why: d.Why}
	conv := func(ds []runtime.TaskDependency) []dependencyEdgeJSON {
		var out []dependencyEdgeJSON
		for _, e := range ds {
			state := "purged"
			if e.State >= 0 {
				state = e.State.String()
			}
			out = append(out, dependencyEdgeJSON{TaskID: e.TaskID, State: state})
		}
		return out
	}
	j.Upstream, j.Downstream = conv(d.Upstream), conv(d.Downstream)
	return j
}
