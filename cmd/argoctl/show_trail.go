package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/argo-retry/argo/runtime"
)

// operatorView is what argoctl show tells about operators' work on a task:
// the tasks it was requeued from and into, its discard requests, and its
// operator trail (migration 000005).
type operatorView struct {
	links    runtime.RequeueLinks
	requests []runtime.DiscardRequest
	trail    []runtime.OperatorAction
	deps     runtime.TaskDependencies // show_deps.go
}

func readOperatorView(ctx context.Context, in *runtime.Inspector, id int64) (operatorView, error) {
	var v operatorView
	var err error
	if v.links, err = in.Links(ctx, id); err != nil {
		return v, err
	}
	if v.requests, err = in.DiscardRequests(ctx, id); err != nil {
		return v, err
	}
	if v.trail, err = in.Trail(ctx, id); err != nil {
		return v, err
	}
	v.deps, err = in.Dependencies(ctx, id)
	return v, err
}

// writeFields adds the links and an open discard request to show's fields.
func (v operatorView) writeFields(field func(string, any)) {
	writeDependencyFields(v.deps, field)
	if v.links.From != 0 {
		field("requeued from", "task "+strconv.FormatInt(v.links.From, 10))
	}
	if v.links.To != 0 {
		field("requeued as", "task "+strconv.FormatInt(v.links.To, 10)+" (this row stays as it was; act on that task)")
	}
	for _, r := range v.requests {
		if r.Decision == "" {
			field("discard requested", fmtMillis(r.RequestedAt)+" by "+withAccount(r.RequestedBy, r.RequestedAccount)+": "+cell(r.Reason, 200)+
				" (awaits another operator: argoctl discard-approve|discard-reject "+strconv.FormatInt(r.TaskPK, 10)+")")
		}
	}
}

// withAccount is an operator's name and, where the database knows it, the
// account the change was made from: "bob (ops_bob@%)".
func withAccount(operator, account string) string {
	if account == "" {
		return operator
	}
	return operator + " (" + account + ")"
}

// writeTrail prints the operator trail, if any, after the history.
func (v operatorView) writeTrail(e *env) {
	if len(v.trail) == 0 {
		return
	}
	fmt.Fprintln(e.stdout, "\noperator trail:")
	w := newTable(e.stdout)
	row(w, "  WHEN", "ACTION", "OPERATOR", "REASON")
	for _, a := range v.trail {
		action := a.Action
		if a.OtherTask.Valid {
			action += " → task " + strconv.FormatInt(a.OtherTask.Int64, 10)
		}
		reason := a.Reason
		if reason == "" {
			reason = "-"
		}
		row(w, "  "+fmtMillis(a.At), action, cell(withAccount(a.Operator, a.DBAccount), 80), cell(reason, 80))
	}
	w.Flush()
}

// operatorJSON is the operator view in show -o json.
type operatorJSON struct {
	RequeuedFrom    int64                `json:"requeued_from,omitempty"`
	RequeuedTo      int64                `json:"requeued_to,omitempty"`
	DiscardRequests []discardRequestJSON `json:"discard_requests,omitempty"`
	Trail           []trailJSON          `json:"operator_trail,omitempty"`
}

type discardRequestJSON struct {
	ID             int64   `json:"id"`
	RequestedBy    string  `json:"requested_by"`
	RequestedAcct  string  `json:"requested_account,omitempty"` // the database account (MySQL)
	Reason         string  `json:"reason"`
	RequestedAt    *string `json:"requested_at"`
	Decision       string  `json:"decision"` // "" while open
	DecidedBy      string  `json:"decided_by,omitempty"`
	DecidedAt      *string `json:"decided_at,omitempty"`
	DecisionReason string  `json:"decision_reason,omitempty"`
}

type trailJSON struct {
	At        *string `json:"at"`
	Action    string  `json:"action"`
	Operator  string  `json:"operator"`
	Account   string  `json:"db_account,omitempty"` // the database account (MySQL)
	Reason    string  `json:"reason"`
	OtherTask int64   `json:"other_task,omitempty"`
}

// showJSON is show -o json: the task, then the operator view.
type showJSON struct {
	taskJSON
	operatorJSON
	dependencyJSON
	// Transitions is the one ordered list of the task's recorded changes
	// (show_transitions.go).
	Transitions []transitionJSON `json:"transitions"`
}

func (v operatorView) toJSON() operatorJSON {
	j := operatorJSON{RequeuedFrom: v.links.From, RequeuedTo: v.links.To}
	for _, r := range v.requests {
		d := discardRequestJSON{ID: r.ID, RequestedBy: r.RequestedBy, RequestedAcct: r.RequestedAccount, Reason: r.Reason, RequestedAt: jsonTime(r.RequestedAt), Decision: r.Decision, DecidedBy: r.DecidedBy, DecisionReason: r.DecisionReason}
		if r.DecidedAt != 0 {
			d.DecidedAt = jsonTime(r.DecidedAt)
		}
		j.DiscardRequests = append(j.DiscardRequests, d)
	}
	for _, a := range v.trail {
		j.Trail = append(j.Trail, trailJSON{At: jsonTime(a.At), Action: a.Action, Operator: a.Operator, Account: a.DBAccount, Reason: a.Reason, OtherTask: a.OtherTask.Int64})
	}
	return j
}
