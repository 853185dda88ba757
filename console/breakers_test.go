package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/console"
	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/runtime"
)

// printerGroup is the flow group the breaker tests act on.
const printerGroup = "printer"

// addFlowGroup makes flow group exist in e's database the way it comes to
// exist in production: an instance running one of its names claims once
// (Busy: as a claimer that found work, so that the group row is written).
func addFlowGroup(t *testing.T, e *env, group string) {
	t.Helper()
	db, dialect, err := runtime.OpenDB(e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := storage.ToMillis(time.Now())
	_, err = storage.New(db, dialect, storage.Options{}).ClaimFlow(context.Background(), storage.FlowClaim{Group: group, Names: []string{"flow.Print"},
		Policy: storage.FlowPolicy{Limit: 5}, Owner: "host-a-1", Now: now, LeaseUntil: now + 60_000, Limit: 1, Busy: true})
	if err != nil {
		t.Fatal(err)
	}
}

// breaker is the breaker state of group as the database has it.
func (e *env) breaker(group string) string {
	e.t.Helper()
	groups, err := e.in.FlowGroups(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, g := range groups {
		if g.Group == group {
			return g.Breaker
		}
	}
	e.t.Fatalf("no flow group %q in the database", group)
	return ""
}

// breakerFormAction is the action of the overview's form.breaker-{verb}
// for group (read from the page, as a browser would).
func breakerFormAction(t *testing.T, body, group, verb string) string {
	t.Helper()
	re := regexp.MustCompile(`<form class="breaker-` + verb + `" data-group="` + regexp.QuoteMeta(html.EscapeString(group)) + `" method="post" action="([^"]+)">`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the overview has no form.breaker-%s[data-group=%q]", verb, group)
	}
	ref, err := url.Parse(html.UnescapeString(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return (&url.URL{Path: "/"}).ResolveReference(ref).String()
}

// TestBreakerOpenClose: the overview's breaker forms open then close a
// flow group's breaker in the database, each recorded in the group's trail
// with the operator and the form's reason, each redirecting to the
// overview, which says what happened.
func TestBreakerOpenClose(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		addFlowGroup(t, e, printerGroup)
		h := e.handler(console.Options{AllowWrites: true})
		if got := e.breaker(printerGroup); got != "closed" {
			t.Fatalf("a new group's breaker is %q", got)
		}
		for _, step := range []struct{ verb, state, flash string }{
			{"open", "forced-open", `Breaker of flow group "printer" opened by hand`},
			{"close", "closed", `Breaker of flow group "printer" closed`},
		} {
			target := breakerFormAction(t, get(t, h, "/"), printerGroup, step.verb)
			if target != "/breakers/printer/"+step.verb {
				t.Errorf("form.breaker-%s posts to %q", step.verb, target)
			}
			r := post(t, h, target, "alice", url.Values{"reason": {"by the " + step.verb + " test"}})
			if r.status != http.StatusSeeOther {
				t.Fatalf("POST %s: %d\n%s", target, r.status, r.body)
			}
			trail, err := e.in.FlowTrail(context.Background(), printerGroup)
			if err != nil || len(trail) == 0 {
				t.Fatalf("trail after %s: %+v, %v", step.verb, trail, err)
			}
			if last := trail[len(trail)-1]; last.Action != "breaker_"+step.verb || last.Operator != "alice" || last.Reason != "by the "+step.verb+" test" {
				t.Fatalf("trail after %s ends with %+v, want breaker_%s by alice with the form's reason", step.verb, last, step.verb)
			}
			if got := e.breaker(printerGroup); got != step.state {
				t.Fatalf("after %s the breaker is %q, want %q", step.verb, got, step.state)
			}
			loc, err := url.Parse(r.header.Get("Location"))
			if err != nil || loc.Path != "../../" {
				t.Fatalf("POST %s redirects to %q, want the overview", target, r.header.Get("Location"))
			}
			body := get(t, h, "/?"+loc.RawQuery)
			if !strings.Contains(body, `id="flash"`) || !strings.Contains(body, html.EscapeString(step.flash)) {
				t.Errorf("the overview after %s does not say %q", step.verb, step.flash)
			}
			if !strings.Contains(body, `class="breaker-`+step.state+`">`+step.state) {
				t.Errorf("the overview after %s does not show the breaker %s", step.verb, step.state)
			}
		}
	})
}

// TestBreakerGuards: the breaker route is refused, changing nothing, when
// the console is read-only (403), without a valid CSRF token (403) or an
// operator (401); an unknown group or action is a 404 saying so; a flash
// names only a group the overview lists.
func TestBreakerGuards(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		addFlowGroup(t, e, printerGroup)
		key := []byte(strings.Repeat("k", 32))
		h := e.handler(console.Options{CSRFKey: key, AllowWrites: true})
		token := csrfOf(t, h, "/", "alice")
		unchanged := func(what string) {
			t.Helper()
			if got := e.breaker(printerGroup); got != "closed" {
				t.Fatalf("%s changed the breaker to %q", what, got)
			}
		}
		readOnly := e.handler(console.Options{CSRFKey: key})
		if body := get(t, readOnly, "/"); strings.Contains(body, `<form class="breaker-`) || strings.Contains(body, `data-csrf`) {
			t.Error("the read-only overview shows breaker forms")
		}
		if r := do(t, readOnly, "POST", "/breakers/printer/open", "alice", url.Values{"csrf": {token}}); r.status != http.StatusForbidden || !strings.Contains(r.body, "read-only") {
			t.Errorf("read-only POST: %d %q", r.status, r.body)
		}
		unchanged("a read-only POST")
		if r := do(t, h, "POST", "/breakers/printer/open", "alice", url.Values{}); r.status != http.StatusForbidden || !strings.Contains(r.body, "CSRF") {
			t.Errorf("POST without a CSRF token: %d %q", r.status, r.body)
		}
		if r := do(t, h, "POST", "/breakers/printer/open", "bob", url.Values{"csrf": {token}}); r.status != http.StatusForbidden {
			t.Errorf("POST with another operator's CSRF token: %d", r.status)
		}
		unchanged("a POST without a valid CSRF token")
		if r := do(t, h, "POST", "/breakers/printer/open", "", url.Values{"csrf": {token}}); r.status != http.StatusUnauthorized {
			t.Errorf("POST without an operator: %d", r.status)
		}
		unchanged("an unauthenticated POST")
		r := do(t, h, "POST", "/breakers/scanner/open", "alice", url.Values{"csrf": {token}})
		if r.status != http.StatusNotFound || !strings.Contains(r.body, "no flow group &#34;scanner&#34;") {
			t.Errorf("POST for an unknown group: %d\n%s", r.status, r.body)
		}
		if r := do(t, h, "POST", "/breakers/printer/toggle", "alice", url.Values{"csrf": {token}}); r.status != http.StatusNotFound || !strings.Contains(r.body, "open, close") {
			t.Errorf("POST of an unknown action: %d %q", r.status, r.body)
		}
		unchanged("a refused POST")
		body := get(t, h, "/?flash=breaker-opened&group=scanner")
		if !strings.Contains(body, `id="flash"`) || strings.Contains(body, "scanner") {
			t.Errorf("a flash names a group the overview does not list:\n%s", body)
		}
	})
}

// TestBreakerGroupEscaped: a group name holding markup shows as text in
// the breakers table, the forms' data-group and the flash, and its forms
// post to a path that names it exactly.
func TestBreakerGroupEscaped(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		group := xssScript + "/x"
		addFlowGroup(t, e, group)
		h := e.handler(console.Options{AllowWrites: true})
		body := get(t, h, "/")
		if strings.Contains(body, xssScript) {
			t.Fatal("the overview shows a group's markup unescaped")
		}
		target := breakerFormAction(t, body, group, "open")
		if want := "/breakers/" + url.PathEscape(group) + "/open"; target != want {
			t.Errorf("form.breaker-open posts to %q, want %q", target, want)
		}
		r := post(t, h, target, "alice", url.Values{})
		if r.status != http.StatusSeeOther {
			t.Fatalf("POST %s: %d\n%s", target, r.status, r.body)
		}
		if got := e.breaker(group); got != "forced-open" {
			t.Fatalf("the group's breaker is %q after open", got)
		}
		loc, _ := url.Parse(r.header.Get("Location"))
		body = get(t, h, "/?"+loc.RawQuery)
		if strings.Contains(body, xssScript) || !strings.Contains(body, html.EscapeString(`flow group "`+group+`" opened`)) {
			t.Errorf("the flash does not show the group escaped:\n%s", body)
		}
	})
}
