package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/argo-retry/argo/runtime"
)

// cmdFlow lists the flow groups (docs/flow-control.md), opens or closes
// one's circuit breaker by hand, or shows who did so: argoctl flow
// [open|close|trail GROUP] [-reason R].
func cmdFlow(e *env, args []string) error {
	fs := newFlagSet("flow")
	reason := fs.String("reason", "", "open, close: why (optional; recorded with who and when in the group's trail, shown by argoctl flow trail GROUP)")
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return withDB(e, func(ctx context.Context, in *runtime.Inspector) error {
			groups, err := in.FlowGroups(ctx)
			if err != nil {
				return err
			}
			if e.json() {
				return writeJSON(e.stdout, flowJSON(groups))
			}
			writeFlow(e, groups)
			return nil
		})
	}
	if len(pos) != 2 || (pos[0] != "open" && pos[0] != "close" && pos[0] != "trail") {
		return usagef("flow: want no arguments (list the groups), or open GROUP, close GROUP or trail GROUP; got %q", strings.Join(pos, " "))
	}
	if pos[0] == "trail" {
		return withDB(e, func(ctx context.Context, in *runtime.Inspector) error { return writeFlowTrail(ctx, e, in, pos[1]) })
	}
	open, group := pos[0] == "open", pos[1]
	return withDB(e, func(ctx context.Context, in *runtime.Inspector) error {
		if open {
			err = in.OpenBreaker(ctx, group, *reason)
		} else {
			err = in.CloseBreaker(ctx, group, *reason)
		}
		if err != nil {
			return err
		}
		if open {
			fmt.Fprintf(e.stdout, "flow group %s: breaker opened; no attempt of it starts until `argoctl flow close %s`\n", group, group)
		} else {
			fmt.Fprintf(e.stdout, "flow group %s: breaker closed; waiting tasks are released at the breaker's release rate\n", group)
		}
		return nil
	})
}

type flowGroupJSON struct {
	Group        string   `json:"group"`
	Members      []string `json:"members"`
	Breaker      string   `json:"breaker"`
	Until        *string  `json:"until"`
	CooldownMs   int64    `json:"cooldown_ms"`
	WindowOK     int      `json:"window_ok"`
	WindowFailed int      `json:"window_failed"`
	Opened       int      `json:"opened"`
	Tokens       float64  `json:"tokens"`
	// Grants: instance → slots of its live slot grant.
	Grants map[string]int `json:"grants"`
}

func flowJSON(groups []runtime.FlowGroup) any {
	out := []flowGroupJSON{}
	for _, g := range groups {
		j := flowGroupJSON{Group: g.Group, Members: g.Members, Breaker: g.Breaker, CooldownMs: g.Cooldown.Milliseconds(),
			WindowOK: g.WindowOK, WindowFailed: g.WindowFailed, Opened: g.Opened, Tokens: g.Tokens, Grants: map[string]int{}}
		for _, gr := range g.Grants {
			j.Grants[gr.Instance] = gr.Slots
		}
		if !g.Until.IsZero() {
			s := g.Until.UTC().Format(time.RFC3339Nano)
			j.Until = &s
		}
		out = append(out, j)
	}
	return map[string]any{"groups": out}
}

func writeFlow(e *env, groups []runtime.FlowGroup) {
	if len(groups) == 0 {
		fmt.Fprintln(e.stdout, "no flow groups (they appear once an instance has claimed a task under limit=, rate= or breaker=)")
		return
	}
	w := newTable(e.stdout)
	fmt.Fprintln(w, "GROUP\tBREAKER\tUNTIL\tWINDOW OK/FAILED\tOPENED\tGRANTED\tMEMBERS")
	for _, g := range groups {
		until := "-"
		if !g.Until.IsZero() {
			until = g.Until.UTC().Format("01-02 15:04:05")
		}
		granted := 0
		for _, gr := range g.Grants {
			granted += gr.Slots
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d/%d\t%d\t%d slots, %d instances\t%s\n", g.Group, g.Breaker, until, g.WindowOK, g.WindowFailed, g.Opened, granted, len(g.Grants), strings.Join(g.Members, ","))
	}
	w.Flush()
}

// writeFlowTrail prints the operator trail of a flow group: its breaker
// opened and closed by hand, oldest first.
func writeFlowTrail(ctx context.Context, e *env, in *runtime.Inspector, group string) error {
	trail, err := in.FlowTrail(ctx, group)
	if err != nil {
		return err
	}
	if e.json() {
		out := []map[string]any{}
		for _, a := range trail {
			out = append(out, map[string]any{"action": a.Action, "operator": a.Operator, "reason": a.Reason, "at": a.At.Time().UTC().Format(time.RFC3339Nano)})
		}
		return writeJSON(e.stdout, map[string]any{"group": group, "trail": out})
	}
	if len(trail) == 0 {
		fmt.Fprintf(e.stdout, "flow group %s: no breaker action by hand recorded\n", group)
		return nil
	}
	w := newTable(e.stdout)
	fmt.Fprintln(w, "AT\tACTION\tOPERATOR\tREASON")
	for _, a := range trail {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", a.At.Time().UTC().Format(time.RFC3339), a.Action, a.Operator, oneLineText(a.Reason))
	}
	w.Flush()
	return nil
}
