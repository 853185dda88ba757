package console_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/argo-retry/argo/console"
	"github.com/argo-retry/argo/runtime"
)

// TestReadOnly: without AllowWrites no page has an action form and every
// POST is refused with 403, changing nothing.
func TestReadOnly(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		key := []byte(strings.Repeat("k", 32))
		h := e.handler(console.Options{CSRFKey: key})
		// A valid token (from a writable console with the same key): only
		// the read-only setting may refuse these POSTs.
		token := csrfOf(t, e.handler(console.Options{CSRFKey: key, AllowWrites: true}), "/tasks", "alice")
		for _, path := range []string{"/", "/tasks", taskPath(idDead), taskPath(idRetrying)} {
			body := get(t, h, path)
			if strings.Contains(body, "<form") && strings.Contains(body, `method="post"`) || strings.Contains(body, `name="csrf"`) {
				t.Errorf("read-only %s shows an action form", path)
			}
			if path != "/" && !strings.Contains(body, `id="read-only"`) {
				t.Errorf("read-only %s does not say so", path)
			}
		}
		for _, path := range []string{taskPath(idDead) + "/requeue", taskPath(idRetrying) + "/force-fail", "/tasks/bulk/requeue"} {
			r := do(t, h, "POST", path, "alice", url.Values{"reason": {"x"}, "state": {"dead"}, "confirm": {"1"}, "csrf": {token}})
			if r.status != http.StatusForbidden || !strings.Contains(r.body, "read-only") {
				t.Errorf("read-only POST %s: %d %q", path, r.status, r.body)
			}
		}
		if e.state(idDead) != runtime.StateDead || e.state(idRetrying) != runtime.StateRetrying || e.state(idBulkFirst) != runtime.StateDead {
			t.Error("a refused POST changed a task")
		}
	})
}

// TestAuthenticate: a request Authenticate refuses gets 401 (with the
// challenge) on pages, JSON and POSTs; assets need no operator.
func TestAuthenticate(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		h := e.handler(console.Options{AllowWrites: true, Challenge: `Basic realm="argo"`})
		for _, path := range []string{"/", "/tasks", taskPath(idDead), "/api/overview.json", "/api/tasks/1.json"} {
			r := do(t, h, "GET", path, "", nil)
			if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != `Basic realm="argo"` || strings.Contains(r.body, "warehouse") {
				t.Errorf("GET %s unauthenticated: %d %q", path, r.status, r.header.Get("WWW-Authenticate"))
			}
		}
		form := url.Values{"reason": {"x"}, "csrf": {csrfOf(t, h, "/tasks", "alice")}}
		if r := do(t, h, "POST", taskPath(idDead)+"/requeue", "", form); r.status != http.StatusUnauthorized {
			t.Errorf("POST unauthenticated: %d", r.status)
		}
		if e.state(idDead) != runtime.StateDead || len(e.trail(idDead)) != 0 {
			t.Error("an unauthenticated POST changed the task")
		}
		if r := do(t, h, "GET", "/assets/console.js", "", nil); r.status != http.StatusOK {
			t.Errorf("assets unauthenticated: %d", r.status)
		}
	})
}

// TestAnonymousOperator: without Authenticate the operator is
// AnonymousOperator, and the trail says so.
func TestAnonymousOperator(t *testing.T) {
	e := newEnv(t, sqliteDSN(t))
	h, err := console.New(console.Options{Inspector: e.in, AllowWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := post(t, h, taskPath(idDead)+"/requeue", "", url.Values{}); r.status != http.StatusSeeOther {
		t.Fatalf("requeue: %d %s", r.status, r.body)
	}
	if got := e.trail(idDead); len(got) != 1 || got[0] != "requeue "+console.AnonymousOperator+" " {
		t.Fatalf("trail: %q", got)
	}
	if e.in.Operator != "" {
		t.Fatalf("the console changed the shared Inspector's Operator to %q", e.in.Operator)
	}
}

// TestCSRF: a POST without the token, with a wrong one, or with another
// operator's is refused with 403 and changes nothing.
func TestCSRF(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		h := e.handler(console.Options{AllowWrites: true})
		bobs := csrfOf(t, h, "/tasks", "bob")
		for name, token := range map[string]string{"missing": "", "wrong": "AAAA" + bobs[4:], "another operator's": bobs} {
			for _, path := range []string{taskPath(idDead) + "/requeue", taskPath(idDead) + "/discard", "/tasks/bulk/requeue"} {
				form := url.Values{"reason": {"x"}, "state": {"dead"}, "confirm": {"1"}}
				if token != "" {
					form.Set("csrf", token)
				}
				r := do(t, h, "POST", path, "alice", form)
				if r.status != http.StatusForbidden || !strings.Contains(r.body, "CSRF token is missing or wrong") {
					t.Errorf("%s token, POST %s: %d %q", name, path, r.status, r.body)
				}
			}
		}
		if e.state(idDead) != runtime.StateDead || len(e.trail(idDead)) != 0 || e.state(idBulkFirst) != runtime.StateDead {
			t.Error("a POST without a valid CSRF token changed a task")
		}
	})
}

// TestSecurityHeaders: every response, errors included, carries the CSP
// without inline script, nosniff, no framing and no referrer.
func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t, sqliteDSN(t))
	h := e.handler(console.Options{})
	for _, r := range []response{do(t, h, "GET", "/", "alice", nil), do(t, h, "GET", "/tasks?state=nope", "alice", nil),
		do(t, h, "GET", "/api/tasks/1.json", "alice", nil), do(t, h, "GET", "/", "", nil), do(t, h, "GET", "/assets/console.css", "", nil)} {
		csp := r.header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self'", "object-src 'none'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("CSP %q lacks %q", csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("CSP allows inline script: %q", csp)
		}
		for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"} {
			if got := r.header.Get(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
	}
	// No page holds inline script or inline event handlers.
	for _, path := range []string{"/", "/tasks", taskPath(idDead)} {
		body := get(t, h, path)
		if strings.Contains(body, "<script>") || strings.Contains(body, " onclick=") || strings.Contains(body, " style=") {
			t.Errorf("%s has inline script or style", path)
		}
	}
}

// TestEscaping: the attacker-controlled texts (arguments, errors, attempt
// errors, discard reason, unique key, tenant, trail reason) show escaped on
// every page and in the JSON; nowhere raw.
func TestEscaping(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		h := e.handler(console.Options{AllowWrites: true})
		// A tenant and a trail reason carrying the payloads too.
		e.insert(seedRow{id: 50, name: "x" + xssImg, state: runtime.StateDead, tenant: xssScript, params: `"` + strings.ReplaceAll(xssImg, `"`, `\"`) + `"`, errMsg: xssImg})
		if r := act(t, h, 50, "discard-request", "alice"+xssImg, "because "+xssScript+xssImg); r.status != http.StatusOK {
			t.Fatalf("discard-request: %d %s", r.status, r.body)
		}
		pages := map[string]string{}
		for _, path := range []string{"/", "/tasks", "/tasks?state=dead", "/tasks?error=" + url.QueryEscape("<script>"), "/tasks?tenant=" + url.QueryEscape(xssScript),
			taskPath(idDead), taskPath(idDiscarded), taskPath(50), "/api/overview.json", "/api/tasks/1.json", "/api/tasks/6.json", "/api/tasks/50.json"} {
			pages[path] = do(t, h, "GET", path, "alice"+xssImg, nil).body
		}
		pages["confirm"] = post(t, h, "/tasks/bulk/discard", "alice", url.Values{"error": {xssScript}, "tenant": {xssScript}, "reason": {xssScript + xssImg}}).body
		pages["400"] = do(t, h, "GET", "/tasks?state="+url.QueryEscape(xssScript), "alice", nil).body
		for path, body := range pages {
			for _, raw := range []string{"<script>alert", "<img src=x", `"><img`} {
				if strings.Contains(body, raw) {
					t.Errorf("%s holds %q unescaped", path, raw)
				}
			}
		}
		for path, want := range map[string]string{
			taskPath(idDead):     `HTTP 503 &lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;&lt;img src=x onerror=alert(1)&gt;`,
			taskPath(50):         `because &lt;script&gt;alert(1)&lt;/script&gt;`,
			"/tasks":             `&lt;script&gt;alert(1)&lt;/script&gt;`,
			"/":                  `data-tenant="&lt;script&gt;alert(1)&lt;/script&gt;"`,
			"/api/tasks/1.json":  `\u003cscript\u003ealert(1)\u003c/script\u003e`,
			"/api/overview.json": `\u003cscript\u003ealert(1)\u003c/script\u003e`,
			"confirm":            `&lt;script&gt;alert(1)&lt;/script&gt;`,
		} {
			if !strings.Contains(pages[path], want) {
				t.Errorf("%s does not show the payload escaped as %q", path, want)
			}
		}
	})
}

// TestFiltersAndPaging: each filter narrows the list; keyset pages walk the
// list without gaps or repeats; bad filters answer 400 saying what to give.
func TestFiltersAndPaging(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		h := e.handler(console.Options{})
		for query, want := range map[string]string{
			"state=dead&name=LightOn":                         "1",
			"state=retrying,pending":                          "3,2",
			"name=labels&state=dead,discarded":                "6,5",
			"tenant=globex":                                   "5",
			"error=PRINTER":                                   "6,5",
			"since=2025-03-01T11:59:00Z&name=warehouse":       "3",
			"until=2h&name=labels":                            "5",
			"since=30m&until=2025-03-01T11:55&name=warehouse": "1",
			"name=nothing-has-this":                           "",
			"name=lighton":                                    "2,1", // ignoring case
			"key=" + url.QueryEscape("C-11"+xssImg):           "1",
			"key=C-11":                                        "",
		} {
			body := get(t, h, "/tasks?"+query)
			if got := strings.Join(rowIDs(body), ","); got != want {
				t.Errorf("?%s lists %q, want %q", query, got, want)
			}
		}
		// Keyset: the 37 tasks by 10 are four pages, each older than the last.
		var seen []string
		next := "/tasks?limit=10&tenant=acme"
		for pages := 0; next != ""; pages++ {
			if pages > 5 {
				t.Fatal("paging does not end")
			}
			body := get(t, h, next)
			ids := rowIDs(body)
			seen = append(seen, ids...)
			next = ""
			if i := strings.Index(body, `<a id="next-page" href="./tasks?`); i >= 0 {
				href := body[i+len(`<a id="next-page" href="./`):]
				next = "/" + strings.ReplaceAll(href[:strings.IndexByte(href, '"')], "&amp;", "&")
				if !strings.Contains(next, "before="+ids[len(ids)-1]) || !strings.Contains(next, "tenant=acme") {
					t.Fatalf("next page %q does not start below %s with the filter", next, ids[len(ids)-1])
				}
			}
		}
		if len(seen) != 32 {
			t.Fatalf("paging saw %d tasks of tenant acme, want 32: %v", len(seen), seen)
		}
		for i := 1; i < len(seen); i++ {
			a, _ := strconv.Atoi(seen[i-1])
			b, _ := strconv.Atoi(seen[i])
			if b >= a {
				t.Fatalf("paging not newest first without repeats: %v", seen)
			}
		}
		for query, want := range map[string]string{
			"state=zombie":                     `filter state: unknown task state &#34;zombie&#34;`,
			"since=yesterday":                  "filter since &#34;yesterday&#34;: want a time",
			"since=1h&until=2h":                "must be before until",
			"before=-3":                        "before &#34;-3&#34;: want a task id",
			"limit=100000":                     "limit &#34;100000&#34;: want a number of tasks per page from 1 to 500",
			"name=" + strings.Repeat("n", 201): "filter name is 201 bytes long: at most 200",
		} {
			r := do(t, h, "GET", "/tasks?"+query, "alice", nil)
			if r.status != http.StatusBadRequest || !strings.Contains(r.body, want) {
				t.Errorf("?%s: %d, want 400 with %q\n%s", query, r.status, want, r.body)
			}
		}
		if r := do(t, h, "GET", "/tasks/abc", "alice", nil); r.status != http.StatusBadRequest {
			t.Errorf("/tasks/abc: %d", r.status)
		}
	})
}

// TestBoundedCount: past CountCap the count shows "N+".
func TestBoundedCount(t *testing.T) {
	e := newEnv(t, sqliteDSN(t))
	h := e.handler(console.Options{CountCap: 20})
	if body := get(t, h, "/tasks"); !strings.Contains(body, `<span id="task-count">20+</span>`) {
		t.Fatalf("a count past the cap is not shown as 20+:\n%s", body)
	}
	if body := get(t, h, "/tasks?tenant=globex"); !strings.Contains(body, `<span id="task-count">1</span>`) {
		t.Fatal("a count under the cap is not exact")
	}
}

// TestFormSizeBound: a POST body past MaxFormBytes is refused with 400
// before anything is read into memory or changed.
func TestFormSizeBound(t *testing.T) {
	e := newEnv(t, sqliteDSN(t))
	h := e.handler(console.Options{AllowWrites: true})
	r := post(t, h, taskPath(idDead)+"/requeue", "alice", url.Values{"reason": {strings.Repeat("r", console.MaxFormBytes)}})
	if r.status != http.StatusBadRequest || e.state(idDead) != runtime.StateDead || len(e.trail(idDead)) != 0 {
		t.Fatalf("oversized POST: %d %q", r.status, r.body)
	}
}
