package main

import (
	"fmt"
	"strconv"

	"github.com/argo-retry/argo/runtime"
)

// showTransitions is the one ordered list show prints of a task's recorded
// changes (issue #26, seed 001 §6): its attempt history's moves, each with
// the trace id of the span it ran in, and its operator actions, from → to
// (runtime.TaskTransitions; docs/semantics.md "The transitions of a task").
func showTransitions(atts []runtime.Attempt, ops operatorView) []runtime.Transition {
	return runtime.TaskTransitions(atts, ops.trail, runtime.InitialState(ops.deps))
}

// fmtMove is a transition's move: "running → retrying"; an unrecorded
// state shows as "?" (a history row written before migration 000024, or
// an operator action on a task whose state before it is not known).
func fmtMove(tr runtime.Transition) string {
	state := func(s runtime.State) string {
		if s == runtime.StateUnrecorded {
			return "?"
		}
		return s.String()
	}
	return state(tr.From) + " → " + state(tr.To)
}

// writeTransitions prints the transitions section of show.
func writeTransitions(e *env, trs []runtime.Transition) {
	if len(trs) == 0 {
		return
	}
	fmt.Fprintln(e.stdout, "\ntransitions:")
	w := newTable(e.stdout)
	row(w, "  WHEN", "#", "KIND", "WHAT", "MOVE", "BY", "TRACE ID")
	for _, tr := range trs {
		what := tr.What
		if tr.OtherTask != 0 {
			what += " → task " + strconv.FormatInt(tr.OtherTask, 10)
		}
		trace := tr.TraceID
		if trace == "" {
			trace = "-"
		}
		row(w, "  "+fmtMillis(tr.At), tr.Attempt, tr.Kind, what, fmtMove(tr), cell(tr.By, 30), trace)
	}
	w.Flush()
}

// transitionJSON is one transition in show -o json; states by name
// ("unrecorded" when not known).
type transitionJSON struct {
	At        *string `json:"at"`
	Attempt   int     `json:"attempt"`
	From      string  `json:"from"`
	To        string  `json:"to"`
	Kind      string  `json:"kind"`
	What      string  `json:"what"`
	By        string  `json:"by"`
	TraceID   string  `json:"trace_id,omitempty"`
	OtherTask int64   `json:"other_task,omitempty"`
}

// stateName is s's name, "unrecorded" for StateUnrecorded (a history row
// written before migration 000024).
func stateName(s runtime.State) string {
	if s == runtime.StateUnrecorded {
		return "unrecorded"
	}
	return s.String()
}

func toTransitionsJSON(trs []runtime.Transition) []transitionJSON {
	out := []transitionJSON{}
	for _, tr := range trs {
		out = append(out, transitionJSON{At: jsonTime(tr.At), Attempt: tr.Attempt, From: stateName(tr.From), To: stateName(tr.To),
			Kind: tr.Kind, What: tr.What, By: tr.By, TraceID: tr.TraceID, OtherTask: tr.OtherTask})
	}
	return out
}
