package main

// argoctl backlog: the figures of the argo_backlog_* gauges (docs/backlog.md).
//
//	argoctl -dsn sqlite:argo.db backlog -top 10

import (
	"context"
	"fmt"

	"github.com/argo-retry/argo/runtime"
)

func cmdBacklog(e *env, args []string) error {
	fs := newFlagSet("backlog")
	top := fs.Int("top", runtime.DefaultBacklogTop, "task names, tenants and flow groups listed, the most due first; the rest are summed as "+runtime.BacklogOther)
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("backlog takes no arguments, got %q", pos[0])
	}
	if *top < 1 {
		return usagef("backlog: -top must be at least 1, got %d", *top)
	}
	return withDB(e, func(ctx context.Context, in *runtime.Inspector) error {
		bl, err := in.BacklogTop(ctx, *top)
		if err != nil {
			return err
		}
		if e.json() {
			return writeJSON(e.stdout, backlogJSON(bl))
		}
		return writeBacklog(e, bl)
	})
}

type backlogLineJSON struct {
	Name             string  `json:"name"`
	Other            bool    `json:"other,omitempty"`
	Due              int     `json:"due"`
	OldestDue        *string `json:"oldest_due"`
	OldestAge        string  `json:"oldest_age"`
	OldestAgeSeconds float64 `json:"oldest_age_seconds"`
	Held             int     `json:"held"`
}

func backlogLine(l runtime.BacklogLine) backlogLineJSON {
	out := backlogLineJSON{Name: l.Name, Other: l.Other, Due: l.Due, OldestAge: fmtDuration(l.OldestAge), OldestAgeSeconds: l.OldestAge.Seconds(), Held: l.Held}
	if l.Due > 0 {
		out.OldestDue = jsonTime(runtime.Millis(l.OldestDue.UnixMilli()))
	}
	return out
}

func backlogJSON(bl *runtime.Backlog) any {
	lines := func(ls []runtime.BacklogLine) []backlogLineJSON {
		out := make([]backlogLineJSON, 0, len(ls))
		for _, l := range ls {
			out = append(out, backlogLine(l))
		}
		return out
	}
	return struct {
		At       string            `json:"at"`
		Total    backlogLineJSON   `json:"total"`
		ByTask   []backlogLineJSON `json:"by_task"`
		ByTenant []backlogLineJSON `json:"by_tenant"`
		ByGroup  []backlogLineJSON `json:"by_group"`
	}{fmtTime(bl.At), backlogLine(bl.Total), lines(bl.ByTask), lines(bl.ByTenant), lines(bl.ByGroup)}
}

// writeBacklog writes one table per dimension, then the total.
func writeBacklog(e *env, bl *runtime.Backlog) error {
	w := newTable(e.stdout)
	age := func(l runtime.BacklogLine) string {
		if l.Due == 0 {
			return "-"
		}
		return fmtDuration(l.OldestAge)
	}
	for _, d := range []struct {
		head  string
		lines []runtime.BacklogLine
	}{{"TASK", bl.ByTask}, {"TENANT", bl.ByTenant}, {"FLOW GROUP", bl.ByGroup}} {
		row(w, d.head, "DUE", "OLDEST DUE FOR", "HELD RETRIES")
		if len(d.lines) == 0 {
			row(w, "(none)")
		}
		for _, l := range d.lines {
			name := l.Name
			if name == "" && d.head == "TENANT" {
				name = `""`
			}
			row(w, name, l.Due, age(l), l.Held)
		}
		if err := w.Flush(); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		fmt.Fprintln(e.stdout)
	}
	_, err := fmt.Fprintf(e.stdout, "total: %d due, the oldest for %s, %d held retries, at %s\n", bl.Total.Due, age(bl.Total), bl.Total.Held, fmtTime(bl.At))
	return err
}
