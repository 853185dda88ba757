package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/argo-retry/argo/runtime"
)

// breakerActions are the hand actions on a flow group's breaker
// (POST ./breakers/{group}/{action}), by the last segment of their route,
// with the flash code the overview shows after each.
var breakerActions = map[string]struct {
	flash string
	do    func(in *runtime.Inspector, r *http.Request, group string) error
}{
	"open": {"breaker-opened", func(in *runtime.Inspector, r *http.Request, group string) error {
		return in.OpenBreaker(r.Context(), group, r.PostForm.Get("reason"))
	}},
	"close": {"breaker-closed", func(in *runtime.Inspector, r *http.Request, group string) error {
		return in.CloseBreaker(r.Context(), group, r.PostForm.Get("reason"))
	}},
}

// breakerFlashes are the overview's messages after a breaker action, by
// code; "%s" is the group, shown only when it is one the overview lists.
var breakerFlashes = map[string]string{
	"breaker-opened": "Breaker of flow group %s opened by hand: no attempt of the group starts on any instance until an operator closes it.",
	"breaker-closed": "Breaker of flow group %s closed: its waiting tasks are released at the breaker's release rate.",
}

// breakerAction is POST ./breakers/{group}/{action}: opens or closes a
// flow group's breaker by hand (Inspector.OpenBreaker, CloseBreaker), as
// `argoctl flow open|close GROUP` does, then redirects to the overview
// with a flash. The operator (and the form's optional reason) go into the
// group's operator trail (Inspector.FlowTrail).
func (c *console) breakerAction(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("action")
	a, ok := breakerActions[name]
	if !ok {
		return &httpError{http.StatusNotFound, "no breaker action " + strconv.Quote(name) + " (open, close)"}
	}
	group := r.PathValue("group")
	in := c.inspector(r)
	groups, err := in.FlowGroups(r.Context())
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(groups, func(g runtime.FlowGroup) bool { return g.Group == group }) {
		return &httpError{http.StatusNotFound, "no flow group " + strconv.Quote(group) + ": flow groups appear once an instance running one of their tasks has claimed; the overview's breakers table lists them"}
	}
	if err := a.do(in, r, group); err != nil {
		return &httpError{http.StatusConflict, "breaker " + name + " of flow group " + strconv.Quote(group) + " refused: " + err.Error()}
	}
	w.Header().Set("Location", "../../?flash="+a.flash+"&group="+url.QueryEscape(group))
	w.WriteHeader(http.StatusSeeOther)
	return nil
}

// breakerFlash is the overview's message for the flash code in v ("" for
// none); the group from v is named only if it is one of d's breakers.
func breakerFlash(v url.Values, d *overviewData) string {
	msg, ok := breakerFlashes[v.Get("flash")]
	if !ok {
		return ""
	}
	group := "(see the table)"
	if g := v.Get("group"); slices.ContainsFunc(d.Breakers, func(b breakerRow) bool { return b.Group == g }) {
		group = strconv.Quote(g)
	}
	return fmt.Sprintf(msg, group)
}
