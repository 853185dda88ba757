package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/argo-retry/argo/runtime"
)

func cmdList(e *env, args []string) error {
	fs := newFlagSet("list")
	var ff filterFlags
	ff.register(fs)
	limit := fs.Int("limit", 50, "most tasks to show")
	offset := fs.Int("offset", 0, "tasks to skip (paging)")
	wide := fs.Bool("wide", false, "full task names and times, whole errors (lines may pass "+strconv.Itoa(listWidth)+" columns)")
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("list takes no arguments, got %q (filters are flags: -state, -name, …)", pos[0])
	}
	if *limit <= 0 || *offset < 0 {
		return usagef("list: -limit must be positive and -offset not negative")
	}
	f, err := ff.filter()
	if err != nil {
		return err
	}
	f.Limit, f.Offset = *limit, *offset
	return withDB(e, func(ctx context.Context, in *runtime.Inspector) error {
		tasks, err := in.List(ctx, f)
		if err != nil {
			return err
		}
		total, err := in.Count(ctx, f)
		if err != nil {
			return err
		}
		if e.json() {
			out := struct {
				Total  int        `json:"total"`
				Offset int        `json:"offset"`
				Limit  int        `json:"limit"`
				Tasks  []taskJSON `json:"tasks"`
			}{Total: total, Offset: f.Offset, Limit: f.Limit, Tasks: []taskJSON{}}
			for _, t := range tasks {
				out.Tasks = append(out.Tasks, toTaskJSON(t, false))
			}
			return writeJSON(e.stdout, out)
		}
		if *wide {
			writeWideList(e, tasks)
		} else {
			writeNarrowList(e, tasks)
		}
		switch {
		case len(tasks) == 0:
			fmt.Fprintf(e.stdout, "no tasks of %d matching\n", total)
		default:
			fmt.Fprintf(e.stdout, "%d–%d of %d matching\n", f.Offset+1, f.Offset+len(tasks), total)
		}
		return nil
	})
}
