package console

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"

	"github.com/argo-retry/argo/runtime"
)

// bulkView is the data of the confirmation page of a bulk action.
type bulkView struct {
	Action, Verb string
	Count        int
	Capped       bool
	FilterText   string
	Reason       string
	Note         string
	Hidden       []hiddenField
	ListQuery    template.URL
	// Upto bounds the confirmed action to the tasks below this id: those
	// the confirmation counted (0: none matched).
	Upto int64
}

// discardable are the states a discard (or its request) accepts.
var discardable = []runtime.State{runtime.StatePending, runtime.StateRetrying, runtime.StateExhausted, runtime.StateDead}

// bulkAction is POST ./tasks/bulk/{requeue|discard}: the filter's tasks.
// Without confirm=1 it changes nothing and answers the confirmation page
// with the number of tasks the action will touch; with it, it acts.
func (c *console) bulkAction(w http.ResponseWriter, r *http.Request) error {
	action := r.PathValue("action")
	if action != "requeue" && action != "discard" && action != "cancel" {
		return &httpError{http.StatusNotFound, "no bulk action " + fmt.Sprintf("%q", action) + " (requeue, discard or cancel)"}
	}
	q, err := parseTaskQuery(r.PostForm, c.opts.Now(), c.opts.PageSize)
	if err != nil {
		return err
	}
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	if action == "discard" && reason == "" {
		return badRequestf("a discard needs a reason: it is recorded in the operator trail")
	}
	if action == "cancel" && reason == "" {
		return badRequestf("a cancel needs a reason: it is recorded in the operator trail")
	}
	ctx := r.Context()
	in := c.inspector(r)
	f := q.filter()
	f.Limit = c.opts.BulkCap
	request := action == "discard" && !c.opts.SingleOperatorDiscard
	verb := action
	if request {
		verb = "request the discard of"
	}
	confirmed := r.PostForm.Get("confirm") == "1"
	// The confirmation fixes the set: the tasks up to the newest one the
	// filter selects then, so that tasks written since are not swept in.
	var upto int64
	if confirmed {
		upto, err = strconv.ParseInt(r.PostForm.Get("upto"), 10, 64)
		if err != nil || upto < 0 {
			return badRequestf("the confirmation lacks the newest task it showed (upto): confirm from the confirmation page")
		}
		if upto == 0 {
			upto = 1 // nothing matched then: match nothing now
		}
	} else {
		newest, err := listPage(ctx, in, f, 0, 1)
		if err != nil {
			return err
		}
		if len(newest) == 1 {
			upto = newest[0].ID + 1
		}
	}
	f.BeforeID = upto
	n, err := c.runBulk(ctx, in, action, request, f, reason, !confirmed)
	if err != nil {
		return &httpError{http.StatusConflict, verb + " refused: " + strings.TrimPrefix(err.Error(), "argo: ")}
	}
	if !confirmed {
		v := &bulkView{Action: action, Verb: verb, Count: n, Capped: n == c.opts.BulkCap, FilterText: describe(q), Upto: upto,
			Reason: reason, Hidden: hiddenFields(q), ListQuery: listQuery(q)}
		switch {
		case action == "requeue":
			v.Note = "Only dead and discarded tasks not requeued before are requeued; each runs again as a new task."
		case action == "cancel":
			v.Note = "Only pending, running, retrying, exhausted and blocked tasks are cancelled: each ends discarded and never runs again; a running attempt is stopped at its instance's next heartbeat."
		case request:
			v.Note = "Each pending, retrying, exhausted or dead task gets a discard request; another operator approves or rejects each."
		default:
			v.Note = "Only pending, retrying, exhausted and dead tasks are discarded."
		}
		render(w, http.StatusOK, "confirm.html", c.newPage(r, "Confirm", v))
		return nil
	}
	p := c.newPage(r, "Done", &bulkView{ListQuery: listQuery(q)})
	p.Flash = fmt.Sprintf("%s: %d task%s.", bulkPast[verb], n, plural(n))
	render(w, http.StatusOK, "done.html", p)
	return nil
}

var bulkPast = map[string]string{"requeue": "Requeued", "discard": "Discarded", "cancel": "Cancelled", "request the discard of": "Discard requested for"}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// runBulk carries out (or with dryRun counts) a bulk action on f's tasks.
func (c *console) runBulk(ctx context.Context, in *runtime.Inspector, action string, request bool, f runtime.Filter, reason string, dryRun bool) (int, error) {
	switch {
	case action == "requeue":
		return in.RequeueWhereWithReason(ctx, f, reason, dryRun)
	case action == "cancel":
		return in.CancelWhere(ctx, f, reason, dryRun)
	case !request:
		return in.DiscardWhere(ctx, f, reason, dryRun)
	}
	f.States = intersect(f.States, discardable)
	f.NotRequeued = true
	tasks, err := in.List(ctx, f)
	if err != nil || dryRun {
		return len(tasks), err
	}
	n := 0
	for _, t := range tasks {
		_, err := in.RequestDiscard(ctx, t.ID, reason)
		switch {
		case err == nil:
			n++
		case errors.Is(err, runtime.ErrDiscardRequestOpen), errors.Is(err, runtime.ErrTransitionInvalid), errors.Is(err, runtime.ErrNotFound):
			// Asked already, or changed since the selection: skip it.
		default:
			return n, err
		}
	}
	return n, nil
}

// intersect is the states of asked that allowed holds (allowed when asked
// is empty); none in common matches nothing.
func intersect(asked, allowed []runtime.State) []runtime.State {
	if len(asked) == 0 {
		return allowed
	}
	var out []runtime.State
	for _, s := range asked {
		for _, a := range allowed {
			if s == a {
				out = append(out, s)
			}
		}
	}
	if out == nil {
		out = []runtime.State{-1}
	}
	return out
}

// describe says in words what q selects.
func describe(q taskQuery) string {
	var parts []string
	for _, h := range hiddenFields(q) {
		parts = append(parts, h.Name+" = "+h.Value)
	}
	if len(parts) == 0 {
		return "no filter (every task)"
	}
	return strings.Join(parts, ", ")
}
