package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/argo-retry/argo/runtime"
)

// defaultCancelLimit bounds a cancel by filter, as the console's BulkCap
// bounds its bulk actions.
const defaultCancelLimit = 10000

// cmdCancel is cancel: by ids (each reported, errors included), or by
// filter (a tenant's, a flow group's tasks: one count, at most -limit).
func cmdCancel(e *env, args []string) error {
	fs := newFlagSet("cancel")
	var ff filterFlags
	ff.register(fs)
	reason := fs.String("reason", "", "why (required; recorded in the operator trail and discard_reason)")
	group := fs.String("group", "", "the tasks of this flow group (its member task names, as argoctl flow lists them)")
	limit := fs.Int("limit", defaultCancelLimit, "cancel at most this many tasks by filter (oldest first)")
	all := fs.Bool("all", false, "allow a filter that matches every task")
	dryRun := fs.Bool("dry-run", false, "change nothing; say how many tasks would be cancelled")
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if strings.TrimSpace(*reason) == "" {
		return usagef("cancel needs -reason TEXT (it is recorded in the operator trail)")
	}
	if *limit < 1 {
		return usagef("cancel: -limit must be positive")
	}
	f, err := ff.filter()
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		if !f.Empty() || *group != "" || *all || *dryRun {
			return usagef("cancel: give task ids or filters (-group, -tenant, …), not both; --all and --dry-run go with filters")
		}
		return operatorAction(e, append([]string{"-reason", *reason}, pos...), cancelAction())
	}
	if f.Empty() && *group == "" && !*all {
		return usagef("cancel: no task ids and no filter: this would cancel every task; add --all if that is what you mean")
	}
	return withDB(e, func(ctx context.Context, in *runtime.Inspector) error {
		if *group != "" {
			members, err := groupMembers(ctx, in, *group)
			if err != nil {
				return err
			}
			f.Names = members
		}
		f.Limit = *limit
		n, err := in.CancelWhere(ctx, f, *reason, *dryRun)
		if err != nil {
			return err
		}
		if e.json() {
			return writeJSON(e.stdout, map[string]any{"action": "cancel", "dry_run": *dryRun, "tasks": n, "limit": *limit})
		}
		capped := ""
		if n == *limit {
			capped = " (the -limit: run again for more)"
		}
		if *dryRun {
			fmt.Fprintf(e.stdout, "would cancel %d %s%s (dry run: nothing changed)\n", n, plural(n, "task"), capped)
		} else {
			fmt.Fprintf(e.stdout, "cancelled %d %s%s\n", n, plural(n, "task"), capped)
		}
		return nil
	})
}

// cancelAction cancels the tasks given by id; the note of a running one
// says which attempt its instance stops.
func cancelAction() action {
	return action{verb: "cancel", past: "cancelled:", reasonNeeded: true,
		do: func(ctx context.Context, in *runtime.Inspector, id int64, reason string) (string, error) {
			r, err := in.Cancel(ctx, id, reason)
			if err != nil || r.From != runtime.StateRunning {
				return "", err
			}
			return fmt.Sprintf("attempt %d was running on %s: it stops at that instance's next heartbeat", r.Attempt, r.Worker), nil
		}}
}

// groupMembers returns the task names of flow group name.
func groupMembers(ctx context.Context, in *runtime.Inspector, name string) ([]string, error) {
	groups, err := in.FlowGroups(ctx)
	if err != nil {
		return nil, err
	}
	var known []string
	for _, g := range groups {
		if g.Group == name {
			if len(g.Members) == 0 {
				return nil, fmt.Errorf("flow group %q has no members recorded yet", name)
			}
			return g.Members, nil
		}
		known = append(known, g.Group)
	}
	return nil, fmt.Errorf("no flow group %q (known: %s); argoctl flow lists them", name, strings.Join(known, ", "))
}
