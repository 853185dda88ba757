package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/argo-retry/argo/runtime"
)

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

func cmdRequeue(e *env, args []string) error { return change(e, "requeue", args) }
func cmdDiscard(e *env, args []string) error { return change(e, "discard", args) }

// change is requeue and discard: by ids (each one reported, errors
// included) or by filter (one count).
func change(e *env, verb string, args []string) error {
	fs := newFlagSet(verb)
	var ff filterFlags
	ff.register(fs)
	all := fs.Bool("all", false, "allow a filter that matches every task")
	dryRun := fs.Bool("dry-run", false, "change nothing; say how many tasks would change")
	var reason *string
	if verb == "discard" {
		reason = fs.String("reason", "", "why (required; recorded in discard_reason)")
	} else {
		reason = fs.String("reason", "", "why (optional; recorded with who and when in the operator trail, shown by argoctl show)")
	}
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if verb == "discard" && strings.TrimSpace(*reason) == "" {
		return usagef("discard needs -reason TEXT (it is recorded with the task)")
	}
	ids, err := parseIDs(pos)
	if err != nil {
		return err
	}
	f, err := ff.filter()
	if err != nil {
		return err
	}
	switch {
	case len(ids) > 0 && !f.Empty():
		return usagef("%s: give task ids or filters, not both", verb)
	case len(ids) > 0 && *all:
		return usagef("%s: --all goes with filters, not with task ids", verb)
	case len(ids) == 0 && f.Empty() && !*all:
		return usagef("%s: no task ids and no filter: this would touch every task; add --all if that is what you mean", verb)
	}
	past := map[string]string{"requeue": "requeued", "discard": "discarded"}[verb]
	return withDB(e, func(ctx context.Context, in *runtime.Inspector) error {
		if len(ids) == 0 {
			var n int
			var err error
			if verb == "requeue" {
				n, err = in.RequeueWhereWithReason(ctx, f, *reason, *dryRun)
			} else {
				n, err = in.DiscardWhere(ctx, f, *reason, *dryRun)
			}
			if err != nil {
				return err
			}
			if e.json() {
				return writeJSON(e.stdout, map[string]any{"action": verb, "dry_run": *dryRun, "tasks": n})
			}
			if *dryRun {
				fmt.Fprintf(e.stdout, "would %s %d %s (dry run: nothing changed)\n", verb, n, plural(n, "task"))
			} else {
				fmt.Fprintf(e.stdout, "%s %d %s\n", past, n, plural(n, "task"))
			}
			return nil
		}

		type result struct {
			ID    int64  `json:"id"`
			OK    bool   `json:"ok"`
			NewID int64  `json:"new_id,omitempty"` // requeue: the new task
			Error string `json:"error,omitempty"`
		}
		var results []result
		var firstErr error
		for _, id := range ids {
			newID, err := changeOne(ctx, in, verb, id, reason, *dryRun)
			if err != nil {
				err = taskErr(id, err)
				if firstErr == nil {
					firstErr = err
				}
				results = append(results, result{ID: id, Error: oneLine(err)})
				continue
			}
			results = append(results, result{ID: id, OK: true, NewID: newID})
			if !e.json() {
				switch {
				case *dryRun:
					fmt.Fprintf(e.stdout, "would %s task %d (dry run: nothing changed)\n", verb, id)
				case newID != 0:
					fmt.Fprintf(e.stdout, "%s task %d as task %d\n", past, id, newID)
				default:
					fmt.Fprintf(e.stdout, "%s task %d\n", past, id)
				}
			}
		}
		if e.json() {
			if err := writeJSON(e.stdout, map[string]any{"action": verb, "dry_run": *dryRun, "results": results}); err != nil {
				return err
			}
		}
		if firstErr != nil && len(ids) > 1 {
			failed := 0
			for _, r := range results {
				if !r.OK {
					failed++
				}
			}
			return fmt.Errorf("%d of %d tasks not %s; first: %w", failed, len(ids), past, firstErr)
		}
		return firstErr
	})
}

// changeOne requeues or discards task id; a requeue returns its new task.
func changeOne(ctx context.Context, in *runtime.Inspector, verb string, id int64, reason *string, dryRun bool) (int64, error) {
	if dryRun {
		t, err := in.Get(ctx, id)
		if err != nil {
			return 0, err
		}
		if verb == "requeue" {
			if l, err := in.Links(ctx, id); err != nil || l.To != 0 {
				return 0, cmp.Or(err, fmt.Errorf("%w: task %d was requeued as task %d; act on that one", runtime.ErrAlreadyRequeued, id, l.To))
			}
			return 0, runtime.CheckRequeue(id, t.State)
		}
		return 0, runtime.CheckTransition(id, t.State, runtime.StateDiscarded)
	}
	if verb == "requeue" {
		return in.RequeueAsNew(ctx, id, *reason)
	}
	return 0, in.Discard(ctx, id, *reason)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
