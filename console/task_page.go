package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/argo-retry/argo/runtime"
)

// taskView is the data of a task's page.
type taskView struct {
	Task      *runtime.Task
	Args      string
	ArgsNote  string
	Policy    string
	Attempts  []attemptView
	Lease     string
	Why       string
	UniqueKey string
	Deps      runtime.TaskDependencies
	TraceID   string
	TraceLink string
	Trail     []runtime.OperatorAction
	// Transitions is the one ordered list of the task's recorded changes
	// (runtime.TaskTransitions): attempts' moves and operator actions.
	Transitions []transitionView
	Requests    []runtime.DiscardRequest
	OpenRequest *runtime.DiscardRequest
	Links       runtime.RequeueLinks
	Can         actionSet
	NoAction    bool
}

// attemptView is one attempt of the timeline.
type attemptView struct {
	N        int    `json:"attempt"`
	Kind     string `json:"kind"`
	Outcome  string `json:"outcome"`
	Worker   string `json:"worker"`
	Started  string `json:"started"`
	Duration string `json:"duration"`
	Backoff  string `json:"backoff,omitempty"`
	Error    string `json:"error,omitempty"`
	// Progress is the attempt's last report: "42% page 42 of 100".
	Progress string `json:"progress,omitempty"`
	// Code is the error code the attempt returned (runtime.Coded).
	Code string `json:"code,omitempty"`
}

// transitionView is one row of the task page's transitions.
type transitionView struct {
	At        string `json:"at"`
	Attempt   int    `json:"attempt"`
	Kind      string `json:"kind"`
	What      string `json:"what"`
	From      string `json:"from"` // "?" when not recorded
	To        string `json:"to"`
	By        string `json:"by"`
	TraceID   string `json:"trace_id,omitempty"`
	OtherTask int64  `json:"other_task,omitempty"`
}

// transitionViews renders trs for the page.
func transitionViews(trs []runtime.Transition) []transitionView {
	state := func(s runtime.State) string {
		if s == runtime.StateUnrecorded {
			return "?"
		}
		return s.String()
	}
	var out []transitionView
	for _, tr := range trs {
		out = append(out, transitionView{At: fmtMillis(tr.At), Attempt: tr.Attempt, Kind: tr.Kind, What: tr.What, From: state(tr.From), To: state(tr.To),
			By: tr.By, TraceID: tr.TraceID, OtherTask: tr.OtherTask})
	}
	return out
}

// actionSet are the actions that apply to a task in its state.
type actionSet struct {
	Requeue, Discard, DiscardRequest, DiscardDecide, Run, ForceFail, Cancel bool
}

// taskID reads the {id} of the route.
func taskID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, badRequestf("task id %q: want a positive whole number", s)
	}
	return id, nil
}

// readTask reads everything a task's page shows.
func (c *console) readTask(r *http.Request, id int64) (*taskView, error) {
	ctx := r.Context()
	in := c.inspector(r)
	t, err := in.Get(ctx, id)
	if errors.Is(err, runtime.ErrNotFound) {
		return nil, &httpError{http.StatusNotFound, "task " + strconv.FormatInt(id, 10) + " not found (purged by retention, or never written)"}
	}
	if err != nil {
		return nil, err
	}
	v := &taskView{Task: t}
	v.Args, v.ArgsNote = c.arguments(t) // cipher.go
	v.Policy, _ = prettyJSON(t.RetryPolicyJSON)
	if t.UniqueKey.Valid {
		v.UniqueKey = t.UniqueKey.String
	}
	atts, err := in.Attempts(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, a := range atts {
		av := attemptView{N: a.Attempt, Kind: a.Kind, Outcome: a.Outcome, Worker: a.Worker, Started: fmtMillis(a.StartedAt), Error: a.Error, Code: a.ErrorCode,
			Progress: progressText(a.Progress, a.ProgressNote, a.ProgressAt != 0)}
		if a.FinishedAt >= a.StartedAt && a.StartedAt > 0 {
			av.Duration = fmtDurationMs(int64(a.FinishedAt - a.StartedAt))
			if a.FinishedAt == a.StartedAt {
				av.Duration = "0s"
			}
		}
		if a.BackoffMs > 0 {
			av.Backoff = fmtDurationMs(a.BackoffMs)
		}
		if av.Worker == "" {
			av.Worker = "-"
		}
		v.Attempts = append(v.Attempts, av)
	}
	v.Lease = leaseText(t)
	if v.Deps, err = in.Dependencies(ctx, id); err != nil {
		return nil, err
	}
	v.Why = v.Deps.Why
	if v.Trail, err = in.Trail(ctx, id); err != nil {
		return nil, err
	}
	v.Transitions = transitionViews(runtime.TaskTransitions(atts, v.Trail, runtime.InitialState(v.Deps)))
	if v.Requests, err = in.DiscardRequests(ctx, id); err != nil {
		return nil, err
	}
	for i := range v.Requests {
		if v.Requests[i].Decision == "" {
			v.OpenRequest = &v.Requests[i]
		}
	}
	if v.Links, err = in.Links(ctx, id); err != nil {
		return nil, err
	}
	v.TraceID = runtime.TraceID(t)
	if v.TraceID != "" && c.opts.TraceURL != "" {
		v.TraceLink = strings.ReplaceAll(c.opts.TraceURL, "{traceId}", v.TraceID)
	}
	v.Can = c.actionsFor(t, v.Links, v.OpenRequest != nil)
	v.NoAction = v.Can == actionSet{}
	return v, nil
}

// actionsFor says which actions apply to t: the states the Inspector's
// changes accept, and the discard review when it is on.
func (c *console) actionsFor(t *runtime.Task, links runtime.RequeueLinks, openRequest bool) actionSet {
	var a actionSet
	switch t.State {
	case runtime.StateDead, runtime.StateDiscarded:
		a.Requeue = links.To == 0
	}
	switch t.State {
	case runtime.StatePending, runtime.StateRetrying, runtime.StateExhausted, runtime.StateDead:
		if links.To == 0 {
			a.Discard = c.opts.SingleOperatorDiscard
			a.DiscardRequest = !c.opts.SingleOperatorDiscard && !openRequest
		}
	}
	a.DiscardDecide = openRequest
	switch t.State {
	case runtime.StatePending, runtime.StateRetrying:
		a.Run = true
	}
	a.ForceFail = runtime.ForceFailable(t.State)
	a.Cancel = runtime.Cancellable(t.State)
	return a
}

// leaseText tells who holds t and until when.
func leaseText(t *runtime.Task) string {
	if t.LeaseOwner == "" {
		return "not leased"
	}
	what := "leased by "
	if t.State == runtime.StateRetrying {
		what = "retry held by instance "
	}
	return what + t.LeaseOwner + " until " + fmtMillis(t.LeaseUntil)
}

// prettyJSON indents s if it is JSON; otherwise it returns s as it is and
// a note saying so.
func prettyJSON(s string) (string, string) {
	if s == "" {
		return "", "none"
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(s), "", "  "); err != nil {
		return s, "not JSON: shown as stored"
	}
	return buf.String(), ""
}

// taskPage is GET ./tasks/{id}.
func (c *console) taskPage(w http.ResponseWriter, r *http.Request) error {
	id, err := taskID(r.PathValue("id"))
	if err != nil {
		return err
	}
	v, err := c.readTask(r, id)
	if err != nil {
		return err
	}
	p := c.newPage(r, "Task "+strconv.FormatInt(id, 10), v)
	p.Flash = flashText(r.URL.Query())
	p.Live = "api/tasks/" + strconv.FormatInt(id, 10) + ".json"
	render(w, http.StatusOK, "task.html", p)
	return nil
}

// taskJSON is what GET ./api/tasks/{id}.json answers: the parts of the
// task page that change.
type taskJSON struct {
	ID       int64         `json:"id"`
	Name     string        `json:"name"`
	State    string        `json:"state"`
	Attempts string        `json:"attempts"`
	Due      string        `json:"due"`
	Modified string        `json:"modified"`
	Lease    string        `json:"lease"`
	Error    string        `json:"error"`
	Code     string        `json:"error_code"`
	Args     string        `json:"args"`
	ArgsNote string        `json:"args_note,omitempty"` // e.g. "encrypted (key k2)…" (cipher.go)
	Timeline []attemptView `json:"timeline"`
	Trail    []trailJSON   `json:"trail"`
	// Transitions is the page's transitions table (transitionView).
	Transitions []transitionView `json:"transitions"`
	// Progress is the task's latest reported progress ("" if none), and
	// ProgressFraction its fraction (null if none), for the bar.
	Progress         string   `json:"progress"`
	ProgressFraction *float64 `json:"progress_fraction"`
}

type trailJSON struct {
	At        string `json:"at"`
	Action    string `json:"action"`
	Operator  string `json:"operator"`
	Reason    string `json:"reason"`
	OtherTask int64  `json:"other_task,omitempty"`
}

func (c *console) taskJSON(r *http.Request) (any, error) {
	file := r.PathValue("file")
	if !strings.HasSuffix(file, ".json") {
		return nil, &httpError{http.StatusNotFound, "not found: ask for api/tasks/ID.json"}
	}
	id, err := taskID(strings.TrimSuffix(file, ".json"))
	if err != nil {
		return nil, err
	}
	v, err := c.readTask(r, id)
	if err != nil {
		return nil, err
	}
	t := v.Task
	j := taskJSON{ID: t.ID, Name: t.Name, State: t.State.String(), Due: fmtMillis(t.ExecuteTime), Modified: fmtMillis(t.GmtModified),
		Lease: v.Lease, Error: t.ErrorMsg, Code: t.ErrorCode, Args: v.Args, ArgsNote: v.ArgsNote, Timeline: v.Attempts, Trail: []trailJSON{},
		Progress: taskProgress(t), ProgressFraction: taskFraction(t)}
	j.Attempts = strconv.Itoa(t.ExecuteTimes)
	if t.MaxAttempts > 0 {
		j.Attempts += " of " + strconv.Itoa(t.MaxAttempts)
	}
	if j.Timeline == nil {
		j.Timeline = []attemptView{}
	}
	j.Transitions = append([]transitionView{}, v.Transitions...)
	for _, a := range v.Trail {
		j.Trail = append(j.Trail, trailJSON{At: fmtMillis(a.At), Action: a.Action, Operator: a.Operator, Reason: a.Reason, OtherTask: a.OtherTask.Int64})
	}
	return j, nil
}
