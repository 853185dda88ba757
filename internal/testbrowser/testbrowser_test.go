package testbrowser_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testbrowser"
)

// strictCSP is the policy the console sends.
const strictCSP = "default-src 'self'; script-src 'self'; object-src 'none'; frame-ancestors 'none'"

// pages serves small pages that misbehave in the ways a tab must notice.
func pages(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	page := func(path, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Security-Policy", strictCSP)
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, "<!doctype html><title>t</title>"+body)
		})
	}
	page("/clean", `<p id="p">hello</p><script src="/clean.js"></script>`)
	mux.HandleFunc("/clean.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `document.getElementById("p").dataset.ran = "yes";`)
	})
	page("/inline", `<p>inline</p><script>window.ran = 1</script>`)
	page("/throws", `<script src="/throws.js"></script>`)
	mux.HandleFunc("/throws.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `throw new Error("boom from the page")`)
	})
	page("/alerts", `<script src="/alerts.js"></script>`)
	mux.HandleFunc("/alerts.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `alert("hi")`)
	})
	mux.HandleFunc("/whoami", func(w http.ResponseWriter, r *http.Request) {
		user, _, _ := r.BasicAuth()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<p id="user">%s</p>`, user)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestTabRecordsPageProblems(t *testing.T) {
	b := testbrowser.Start(t)
	srv := pages(t)
	tab := b.NewTab()

	tab.Navigate(srv.URL + "/clean")
	tab.WaitUntil("the page's script to run", 10*time.Second, `document.getElementById("p").dataset.ran === "yes"`)
	if got := tab.Text("#p"); got != "hello" {
		t.Errorf("text of #p = %q, want hello", got)
	}
	if p := tab.Problems(); len(p) != 0 {
		t.Fatalf("a clean page recorded problems: %q", p)
	}

	cases := []struct {
		path, want string
		dialog     bool
	}{
		{path: "/inline", want: "Content Security Policy"},
		{path: "/throws", want: "boom from the page"},
		{path: "/alerts", want: "hi", dialog: true},
	}
	for _, c := range cases {
		tab.Navigate(srv.URL + c.path)
		take := tab.TakeProblems
		if c.dialog {
			take = tab.TakeDialogs
		}
		deadline := time.Now().Add(10 * time.Second)
		var got []string
		for len(got) == 0 && time.Now().Before(deadline) {
			got = take()
			if len(got) == 0 {
				time.Sleep(20 * time.Millisecond)
			}
		}
		t.Logf("%s: %q", c.path, got)
		if len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), c.want) {
			t.Errorf("%s: recorded %q, want an entry containing %q", c.path, got, c.want)
		}
	}
	if ran := testbrowser.Eval[bool](tab, "window.ran === 1"); ran {
		t.Errorf("an inline script ran under the CSP")
	}
}

func TestTabsAreSeparateOperators(t *testing.T) {
	b := testbrowser.Start(t)
	srv := pages(t)
	alice := b.NewTab(testbrowser.WithBasicAuth("alice", "pw"))
	bob := b.NewTab(testbrowser.WithBasicAuth("bob", "pw"))
	alice.Navigate(srv.URL + "/whoami")
	bob.Navigate(srv.URL + "/whoami")
	if got := alice.Text("#user"); got != "alice" {
		t.Errorf("alice's tab is %q", got)
	}
	if got := bob.Text("#user"); got != "bob" {
		t.Errorf("bob's tab is %q", got)
	}
}

// recordingT is a testing.TB whose errors and cleanups the test keeps, to
// see what a tab reports when it closes.
type recordingT struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (r *recordingT) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recordingT) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recordingT) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestUntakenProblemsFailTheTest(t *testing.T) {
	srv := pages(t)
	rec := &recordingT{TB: t}
	defer rec.runCleanups()
	b := testbrowser.Start(rec)
	tab := b.NewTab()
	tab.Navigate(srv.URL + "/throws")
	tab.Navigate(srv.URL + "/alerts")
	deadline := time.Now().Add(10 * time.Second)
	for (len(tab.Problems()) == 0 || len(tab.Dialogs()) == 0) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	rec.runCleanups()
	rec.cleanups = nil
	all := strings.Join(rec.errors, "\n")
	if !strings.Contains(all, "boom from the page") || !strings.Contains(all, "dialog") {
		t.Errorf("closing a tab with an error and a dialog not taken reported %q; want both as test errors", rec.errors)
	}
}

// stoppingT records Fatal and Skip and ends the goroutine, as the real ones do.
type stoppingT struct {
	testing.TB
	fatal, skip string
}

func (s *stoppingT) Fatal(args ...any) { s.fatal = fmt.Sprint(args...); goruntime.Goexit() }
func (s *stoppingT) Skip(args ...any)  { s.skip = fmt.Sprint(args...); goruntime.Goexit() }

func TestMissingChromiumFailsUnderCI(t *testing.T) {
	t.Setenv(testbrowser.EnvChromium, "")
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		st := &stoppingT{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			testbrowser.Start(st)
		}()
		<-done
		switch {
		case ci != "" && (st.fatal == "" || st.skip != ""):
			t.Errorf("CI=%s without %s: fatal %q, skip %q; want the test to fail", ci, testbrowser.EnvChromium, st.fatal, st.skip)
		case ci == "" && (st.skip == "" || st.fatal != ""):
			t.Errorf("without CI and %s: fatal %q, skip %q; want a skip", testbrowser.EnvChromium, st.fatal, st.skip)
		}
		if msg := st.fatal + st.skip; !strings.Contains(msg, "apt-get install chromium") {
			t.Errorf("message %q does not say how to get a browser", msg)
		}
	}
}
