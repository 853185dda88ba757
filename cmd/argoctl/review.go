package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/argo-retry/argo/runtime"
)

// action is one of the operator actions on task ids that are not requeue
// or discard: what it is called, whether its reason is required, whether
// it needs to know the operator by name, and what it does to one task.
type action struct {
	verb, past    string
	reasonNeeded  bool
	operatorNamed bool
	do            func(ctx context.Context, in *runtime.Inspector, id int64, reason string) (string, error)
}

func cmdDiscardRequest(e *env, args []string) error {
	return operatorAction(e, args, action{verb: "discard-request", past: "discard requested for", reasonNeeded: true, operatorNamed: true,
		do: func(ctx context.Context, in *runtime.Inspector, id int64, reason string) (string, error) {
			reqID, err := in.RequestDiscard(ctx, id, reason)
			return "request " + strconv.FormatInt(reqID, 10) + "; another operator approves it with argoctl discard-approve " + strconv.FormatInt(id, 10), err
		}})
}

func cmdDiscardApprove(e *env, args []string) error {
	return operatorAction(e, args, action{verb: "discard-approve", past: "discard approved: discarded", operatorNamed: true,
		do: func(ctx context.Context, in *runtime.Inspector, id int64, reason string) (string, error) {
			return "", in.ApproveDiscard(ctx, id, reason)
		}})
}

func cmdDiscardReject(e *env, args []string) error {
	return operatorAction(e, args, action{verb: "discard-reject", past: "discard rejected for", operatorNamed: true,
		do: func(ctx context.Context, in *runtime.Inspector, id int64, reason string) (string, error) {
			return "", in.RejectDiscard(ctx, id, reason)
		}})
}

func cmdForceFail(e *env, args []string) error {
	return operatorAction(e, args, action{verb: "force-fail", past: "sent to the dead letter:", reasonNeeded: true,
		do: func(ctx context.Context, in *runtime.Inspector, id int64, reason string) (string, error) {
			return "", in.ForceFail(ctx, id, reason)
		}})
}

func cmdRunNow(e *env, args []string) error {
	return operatorAction(e, args, action{verb: "run", past: "due now:",
		do: func(ctx context.Context, in *runtime.Inspector, id int64, reason string) (string, error) {
			return "", in.RunNow(ctx, id, reason)
		}})
}

// operatorAction runs a on each task id given, reporting each (errors
// included); the first failure is the error.
func operatorAction(e *env, args []string, a action) error {
	fs := newFlagSet(a.verb)
	help := "why (optional; recorded in the operator trail)"
	if a.reasonNeeded {
		help = "why (required; recorded in the operator trail)"
	}
	reason := fs.String("reason", "", help)
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("%s takes task ids", a.verb)
	}
	if a.reasonNeeded && strings.TrimSpace(*reason) == "" {
		return usagef("%s needs -reason TEXT (it is recorded in the operator trail)", a.verb)
	}
	if a.operatorNamed && strings.TrimSpace(e.g.operator) == "" {
		return usagef("%s needs to know who you are: give -operator NAME (no OS user is known)", a.verb)
	}
	ids, err := parseIDs(pos)
	if err != nil {
		return err
	}
	return withDB(e, func(ctx context.Context, in *runtime.Inspector) error {
		type result struct {
			ID    int64  `json:"id"`
			OK    bool   `json:"ok"`
			Note  string `json:"note,omitempty"`
			Error string `json:"error,omitempty"`
		}
		var results []result
		var firstErr error
		for _, id := range ids {
			note, err := a.do(ctx, in, id, *reason)
			if err != nil {
				err = taskErr(id, err)
				if firstErr == nil {
					firstErr = err
				}
				results = append(results, result{ID: id, Error: oneLine(err)})
				continue
			}
			results = append(results, result{ID: id, OK: true, Note: note})
			if !e.json() {
				line := fmt.Sprintf("%s task %d", a.past, id)
				if note != "" {
					line += " (" + note + ")"
				}
				fmt.Fprintln(e.stdout, line)
			}
		}
		if e.json() {
			if err := writeJSON(e.stdout, map[string]any{"action": a.verb, "operator": in.Operator, "results": results}); err != nil {
				return err
			}
		}
		if firstErr != nil && len(ids) > 1 {
			return fmt.Errorf("%d of %d tasks refused; first: %w", countFailed(results, func(r result) bool { return !r.OK }), len(ids), firstErr)
		}
		return firstErr
	})
}

func countFailed[T any](rs []T, failed func(T) bool) int {
	n := 0
	for _, r := range rs {
		if failed(r) {
			n++
		}
	}
	return n
}

// truthy reads a yes/no setting from the environment: 1, true, yes, on.
func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}
