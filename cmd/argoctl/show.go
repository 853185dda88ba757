package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/argo-retry/argo/runtime"
)

func cmdShow(e *env, args []string) error {
	fs := newFlagSet("show")
	attempt := fs.Int("attempt", 0, "show only attempt N (from 1)")
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("show takes one task id")
	}
	ids, err := parseIDs(pos)
	if err != nil {
		return err
	}
	id := ids[0]
	switch {
	case *attempt < 0:
		return usagef("show: -attempt %d: attempts count from 1", *attempt)
	case *attempt > 0:
		return showAttempt(e, id, *attempt) // show_attempt.go
	}
	return withDB(e, func(ctx context.Context, in *runtime.Inspector) error {
		t, err := in.Get(ctx, id)
		if err != nil {
			return taskErr(id, err)
		}
		atts, err := in.Attempts(ctx, id)
		if err != nil {
			return err
		}
		ops, err := readOperatorView(ctx, in, id)
		if err != nil {
			return err
		}
		if e.json() {
			j := toTaskJSON(t, true)
			j.encrypted(e, t) // cipher.go
			j.AttemptHistories = []attemptJSON{}
			for _, a := range atts {
				j.AttemptHistories = append(j.AttemptHistories, toAttemptJSON(a))
			}
			return writeJSON(e.stdout, showJSON{taskJSON: j, operatorJSON: ops.toJSON(), dependencyJSON: toDependencyJSON(ops.deps),
				Transitions: toTransitionsJSON(showTransitions(atts, ops))})
		}
		writeShow(e, t, atts, ops)
		return nil
	})
}

// taskErr names the task in an error, and says "not found" plainly.
func taskErr(id int64, err error) error {
	if errors.Is(err, runtime.ErrNotFound) {
		return fmt.Errorf("task %d not found", id)
	}
	if errors.Is(err, runtime.ErrTransitionInvalid) {
		return err // already names the task
	}
	return fmt.Errorf("task %d: %s", id, oneLine(err))
}

func writeShow(e *env, t *runtime.Task, atts []runtime.Attempt, ops operatorView) {
	w := newTable(e.stdout)
	field := func(k string, v any) {
		if s, ok := v.(string); ok && s == "" {
			return
		}
		row(w, k+":", v)
	}
	field("id", t.ID)
	field("task", t.Name)
	field("state", fmt.Sprintf("%s (%d)", t.State, int(t.State)))
	field("attempts", attempts(t))
	field("progress", taskProgress(t))
	field("due", fmtMillis(t.ExecuteTime))
	field("shard", t.ShardKey)
	field("tenant", t.Tenant)
	field("trace id", runtime.TraceID(t))
	field("created", fmtMillis(t.GmtCreate))
	field("modified", fmtMillis(t.GmtModified))
	field("method", t.MethodName)
	field("signature", t.MethodSignName)
	field("parameter types", t.ParameterTypes)
	field("mode", t.PerformanceWay.String()+", "+t.ThreadWay.String())
	field("retry policy", t.RetryPolicyJSON)
	field("fallback", t.FallbackClassName)
	field("alert", t.AlertExpression)
	field("alert action", t.AlertActionBeanName)
	if t.UniqueKey.Valid {
		field("unique key", t.UniqueKey.String)
	}
	if t.LeaseOwner != "" {
		field("lease", t.LeaseOwner+" until "+fmtMillis(t.LeaseUntil))
	}
	field("error", cell(t.ErrorMsg, 200))
	field("error code", t.ErrorCode)
	field("fallback error", strings.TrimSpace(t.FallbackErrorMsg))
	field("discard reason", t.DiscardReason)
	field("last requeue", lastRequeue(atts))
	ops.writeFields(field)
	w.Flush()
	// After the history: the transitions (show_transitions.go), then the trail.
	defer ops.writeTrail(e)
	defer writeTransitions(e, showTransitions(atts, ops))

	fmt.Fprintln(e.stdout, "\narguments:")
	var buf bytes.Buffer
	switch err := json.Indent(&buf, []byte(t.Parameter), "  ", "  "); {
	case writeEncrypted(e, t): // cipher.go
	case err == nil:
		fmt.Fprintf(e.stdout, "  %s\n", buf.String())
	default:
		fmt.Fprintf(e.stdout, "  (not JSON) %q\n", t.Parameter)
	}

	fmt.Fprintln(e.stdout, "\nhistory:")
	if len(atts) == 0 {
		fmt.Fprintln(e.stdout, "  no attempt yet")
		return
	}
	w = newTable(e.stdout)
	// A PROGRESS column when some attempt reported progress (progress.go).
	withProgress := anyProgress(atts)
	head := []any{"  #", "KIND", "OUTCOME", "STARTED", "DURATION", "BACKOFF", "WORKER"}
	if withProgress {
		head = append(head, "PROGRESS")
	}
	// A CODE column when some attempt returned an error code (runtime.Coded).
	withCode := slices.ContainsFunc(atts, func(a runtime.Attempt) bool { return a.ErrorCode != "" })
	if withCode {
		head = append(head, "CODE")
	}
	row(w, append(head, "ERROR")...)
	for _, a := range atts {
		backoff := "-"
		if a.BackoffMs > 0 {
			backoff = fmtDuration(msDuration(a.BackoffMs))
		}
		cells := []any{fmt.Sprintf("  %d", a.Attempt), a.Kind, a.Outcome, fmtMillis(a.StartedAt),
			fmtDuration(a.FinishedAt.Time().Sub(a.StartedAt.Time())), backoff, cell(a.Worker, 30)}
		if withProgress {
			cells = append(cells, attemptProgress(a))
		}
		if withCode {
			cells = append(cells, cmp.Or(a.ErrorCode, "-"))
		}
		row(w, append(cells, cell(a.Error, 80))...)
	}
	w.Flush()
}

// lastRequeue describes the latest requeue in a history: when, by whom,
// and why; "" when the task was never requeued.
func lastRequeue(atts []runtime.Attempt) string {
	for i := len(atts) - 1; i >= 0; i-- {
		a := atts[i]
		if a.Kind != runtime.AttemptKindRequeue {
			continue
		}
		s := fmtMillis(a.StartedAt) + " by " + a.Worker
		if reason := strings.TrimSpace(a.Error); reason != "" {
			s += ": " + cell(reason, 200)
		} else {
			s += " (no reason given)"
		}
		return s
	}
	return ""
}
