package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/argo-retry/argo/runtime"
)

// actionDef is one operator action on one task (POST ./tasks/{id}/{name}).
type actionDef struct {
	// reasonNeeded: the form must carry a reason.
	reasonNeeded bool
	// flash is the code of the message the task page shows after it.
	flash string
	do    func(ctx context.Context, in *runtime.Inspector, id int64, reason string) (newID int64, err error)
}

// taskActions are the actions by the last segment of their route.
var taskActions = map[string]actionDef{
	"requeue": {flash: "requeued", do: func(ctx context.Context, in *runtime.Inspector, id int64, reason string) (int64, error) {
		return in.RequeueAsNew(ctx, id, reason)
	}},
	"discard": {reasonNeeded: true, flash: "discarded", do: func(ctx context.Context, in *runtime.Inspector, id int64, reason string) (int64, error) {
		return 0, in.Discard(ctx, id, reason)
	}},
	"discard-request": {reasonNeeded: true, flash: "discard-requested", do: func(ctx context.Context, in *runtime.Inspector, id int64, reason string) (int64, error) {
		_, err := in.RequestDiscard(ctx, id, reason)
		return 0, err
	}},
	"discard-approve": {flash: "discard-approved", do: func(ctx context.Context, in *runtime.Inspector, id int64, reason string) (int64, error) {
		return 0, in.ApproveDiscard(ctx, id, reason)
	}},
	"discard-reject": {flash: "discard-rejected", do: func(ctx context.Context, in *runtime.Inspector, id int64, reason string) (int64, error) {
		return 0, in.RejectDiscard(ctx, id, reason)
	}},
	"run": {flash: "run", do: func(ctx context.Context, in *runtime.Inspector, id int64, reason string) (int64, error) {
		return 0, in.RunNow(ctx, id, reason)
	}},
	"force-fail": {reasonNeeded: true, flash: "force-failed", do: func(ctx context.Context, in *runtime.Inspector, id int64, reason string) (int64, error) {
		return 0, in.ForceFail(ctx, id, reason)
	}},
	"cancel": {reasonNeeded: true, flash: "cancelled", do: func(ctx context.Context, in *runtime.Inspector, id int64, reason string) (int64, error) {
		_, err := in.Cancel(ctx, id, reason)
		return 0, err
	}},
}

// flashes are the messages a task page shows after an action, by code.
// Only these fixed texts (and a task id) come from the URL.
var flashes = map[string]string{
	"requeued":          "Requeued: the call runs again as a new task; this row stays as it was.",
	"discarded":         "Discarded.",
	"discard-requested": "Discard requested: another operator approves or rejects it.",
	"discard-approved":  "Discard approved: the task is discarded.",
	"discard-rejected":  "Discard rejected: the task stays as it is.",
	"run":               "Due now: the next claim of any instance takes it.",
	"force-failed":      "Sent to the dead letter.",
	"cancelled":         "Cancelled: the task ends discarded and never runs again; a running attempt is stopped at its instance's next heartbeat.",
}

// flashText is the message of the flash code in v ("" for none).
func flashText(v url.Values) string {
	msg := flashes[v.Get("flash")]
	if msg == "" {
		return ""
	}
	if n, err := strconv.ParseInt(v.Get("new"), 10, 64); err == nil && n > 0 {
		msg += " New task: " + strconv.FormatInt(n, 10) + "."
	}
	return msg
}

// taskAction is POST ./tasks/{id}/{action}. Success redirects to
// the task's page with a flash; a refusal shows the page with the reason.
func (c *console) taskAction(w http.ResponseWriter, r *http.Request) error {
	id, err := taskID(r.PathValue("id"))
	if err != nil {
		return err
	}
	name := r.PathValue("action")
	a, ok := taskActions[name]
	if !ok {
		return &httpError{http.StatusNotFound, "no action " + strconv.Quote(name) + " (requeue, discard, discard-request, discard-approve, discard-reject, run, force-fail, cancel)"}
	}
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	status := http.StatusConflict
	if a.reasonNeeded && reason == "" {
		err, status = errors.New(name+" needs a reason: it is recorded in the operator trail"), http.StatusBadRequest
	} else {
		var newID int64
		newID, err = a.do(r.Context(), c.inspector(r), id, reason)
		if err == nil {
			loc := "../" + strconv.FormatInt(id, 10) + "?flash=" + a.flash
			if newID != 0 {
				loc += "&new=" + strconv.FormatInt(newID, 10)
			}
			w.Header().Set("Location", loc)
			w.WriteHeader(http.StatusSeeOther)
			return nil
		}
		if errors.Is(err, runtime.ErrNotFound) {
			status = http.StatusNotFound
		}
	}
	v, rerr := c.readTask(r, id)
	if rerr != nil {
		return rerr
	}
	p := c.newPage(r, "Task "+strconv.FormatInt(id, 10), v)
	p.Flash, p.FlashError = name+" refused: "+strings.TrimPrefix(err.Error(), "argo: "), true
	render(w, status, "task.html", p)
	return nil
}
