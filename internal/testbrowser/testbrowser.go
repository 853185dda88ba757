// Package testbrowser drives a real headless Chromium from a test, for the
// end-to-end tests of argo's web console: a fresh browser per test (its own
// profile in t.TempDir), tabs with their own cookies and HTTP headers (one
// per operator), a deadline on every action, and the page's JavaScript errors,
// Content-Security-Policy violations and dialogs (alert, confirm, prompt)
// recorded, each of which fails the test when it ends.
//
// The browser is the program named by ARGO_TEST_CHROMIUM (`make test`
// installs Debian's chromium and sets it to /usr/bin/chromium). When it is
// unset the test is skipped with a message saying how to get one, or, under
// CI (CI set), fails: the same rule internal/testdb applies to MariaDB.
package testbrowser

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// EnvChromium names the environment variable holding the path of the
// Chromium program.
const EnvChromium = "ARGO_TEST_CHROMIUM"

// DefaultActionTimeout bounds every action a Tab runs (a navigation, a
// click, a read, a wait); a test may change Tab.Timeout.
const DefaultActionTimeout = 20 * time.Second

// StartTimeout bounds the start of the browser and the opening of a tab.
const StartTimeout = 60 * time.Second

// Default viewport of every tab, in CSS pixels: screenshots of this size
// stay small.
const (
	DefaultViewportWidth  = 1280
	DefaultViewportHeight = 800
)

const missingHint = EnvChromium + " is not set: run the tests with `make test`, which installs " +
	"Debian's chromium and sets it, or install it (sudo apt-get install chromium) and run " +
	EnvChromium + "=/usr/bin/chromium go test ./..."

// Flags are the command-line flags every browser is started with (beside
// --user-data-dir, a fresh directory per browser): headless, and quiet (no
// sandbox, which needs privileges a test machine often lacks; no GPU; no
// network of its own: no QUIC, background fetches, component updates, sync).
var Flags = []string{
	"headless",
	"no-sandbox",
	"disable-gpu",
	"disable-quic",
	"no-first-run",
	"disable-background-networking",
	"disable-component-update",
	"disable-sync",
}

// Browser is one headless Chromium process, stopped when the test ends.
type Browser struct {
	t testing.TB
	// ctx is the browser's first tab; every Tab is a new one beside it.
	ctx context.Context
}

// Start starts a headless Chromium for t (skipping t, or failing it under
// CI, when ARGO_TEST_CHROMIUM is unset) and stops it when t ends.
func Start(t testing.TB) *Browser {
	t.Helper()
	path := os.Getenv(EnvChromium)
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal(missingHint)
		}
		t.Skip(missingHint)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("testbrowser: %s=%s: %v", EnvChromium, path, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(DefaultViewportWidth, DefaultViewportHeight),
	}
	for _, f := range Flags {
		opts = append(opts, chromedp.Flag(f, true))
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	// Registered before the start, so that a failed start stops the process
	// too; cancelAlloc waits until it has exited (before t.TempDir goes).
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := withDeadline(ctx, StartTimeout, func() error { return chromedp.Do(ctx) }); err != nil {
		t.Fatalf("testbrowser: starting %s: %v", path, err)
	}
	return &Browser{t: t, ctx: ctx}
}

// withDeadline runs f (which must run on ctx or a context derived from it
// without its own deadline, as the first Run of a chromedp context must) and
// gives up after d: the first Run of a context ties the tab (or browser) to
// that context, so a timeout cannot go on the context itself.
func withDeadline(ctx context.Context, d time.Duration, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		chromedp.Cancel(ctx)
		<-done
		return fmt.Errorf("no answer after %v", d)
	}
}

// TabOption configures a tab.
type TabOption func(*tabConfig)

type tabConfig struct {
	headers              map[string]string
	viewportW, viewportH int64
}

// WithBasicAuth sends an HTTP basic Authorization header for user and
// password with every request of the tab (the operator it acts as).
func WithBasicAuth(user, password string) TabOption {
	return WithHeader("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
}

// WithHeader sends an extra HTTP header with every request of the tab.
func WithHeader(name, value string) TabOption {
	return func(c *tabConfig) { c.headers[name] = value }
}

// WithViewport sets the tab's viewport (default
// DefaultViewportWidth×DefaultViewportHeight).
func WithViewport(width, height int) TabOption {
	return func(c *tabConfig) { c.viewportW, c.viewportH = int64(width), int64(height) }
}

// Tab is one browser tab in a browser context of its own (its own cookies
// and storage, like a separate browser profile). Its methods fail the test
// (t.Fatalf) when an action does not complete within Timeout; they must be
// called from the test's goroutine.
type Tab struct {
	t   testing.TB
	ctx context.Context
	// Timeout bounds each action; default DefaultActionTimeout.
	Timeout time.Duration

	mu       sync.Mutex
	problems []string // JavaScript errors and CSP violations not yet taken
	dialogs  []string // dialogs opened (and dismissed) not yet taken
	network  []string // failed loads, for the log
	requests []string // URLs of every request the tab sent, in order
}

// NewTab opens a tab in a new browser context and closes it when the test
// ends. Every JavaScript error, CSP violation or dialog the tab records and
// the test does not take (TakeProblems, TakeDialogs) fails the test at its
// end.
func (b *Browser) NewTab(opts ...TabOption) *Tab {
	b.t.Helper()
	cfg := tabConfig{headers: map[string]string{}, viewportW: DefaultViewportWidth, viewportH: DefaultViewportHeight}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	tab := &Tab{t: b.t, ctx: ctx, Timeout: DefaultActionTimeout}
	dialogs := make(chan struct{}, 16)
	b.t.Cleanup(func() {
		cancel()
		tab.report()
	})
	open := func() error {
		if err := chromedp.Do(ctx); err != nil {
			return err
		}
		return chromedp.Listen(ctx, func(ev any) { tab.record(ev, dialogs) })
	}
	if err := withDeadline(ctx, StartTimeout, open); err != nil {
		b.t.Fatalf("testbrowser: opening a tab: %v", err)
	}
	// A dialog blocks the page until it is answered: dismiss each at once
	// (from a goroutine: the listener may not run commands).
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-dialogs:
				actx, acancel := context.WithTimeout(ctx, DefaultActionTimeout)
				_, _ = chromedp.Call(actx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
				acancel()
			}
		}
	}()
	setup := []chromedp.Action[chromedp.Void]{
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
				Width: cfg.viewportW, Height: cfg.viewportH, DeviceScaleFactor: 1,
			})
			return err
		}),
	}
	if len(cfg.headers) > 0 {
		headers := network.Headers{}
		for k, v := range cfg.headers {
			headers[k] = v
		}
		setup = append(setup, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: headers})
			return err
		}))
	}
	tab.Do("set up the tab", setup...)
	return tab
}

// record keeps what the page reports that a test must see: it runs on the
// tab's event loop, so it only appends.
func (tab *Tab) record(ev any, dialogs chan<- struct{}) {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	switch ev := ev.(type) {
	case *cdpruntime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text += " " + strings.SplitN(d.Exception.Description, "\n", 2)[0]
		}
		tab.problems = append(tab.problems, fmt.Sprintf("JavaScript exception at %s:%d: %s", d.URL, d.LineNumber+1, text))
	case *cdpruntime.EventConsoleAPICalled:
		if ev.Type == cdpruntime.ConsoleAPICalledTypeError || ev.Type == cdpruntime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				if a.Value != nil {
					args = append(args, string(a.Value))
				} else {
					args = append(args, a.Description)
				}
			}
			tab.problems = append(tab.problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
		}
	case *log.EventEntryAdded:
		e := ev.Entry
		if e.Level != log.EntryLevelError {
			return
		}
		if e.Source == log.EntrySourceNetwork {
			// A refused request (a 403 a test provokes) is the server's
			// answer, not a page error: kept for the log only.
			tab.network = append(tab.network, e.Text+" "+e.URL)
			return
		}
		tab.problems = append(tab.problems, fmt.Sprintf("browser log (%s) at %s: %s", e.Source, e.URL, e.Text))
	case *network.EventRequestWillBeSent:
		tab.requests = append(tab.requests, ev.Request.URL)
	case *page.EventJavascriptDialogOpening:
		tab.dialogs = append(tab.dialogs, fmt.Sprintf("%s dialog opened by %s: %q", ev.Type, ev.URL, ev.Message))
		select {
		case dialogs <- struct{}{}:
		default:
		}
	}
}

// report fails the test for every problem and dialog not taken.
func (tab *Tab) report() {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	for _, p := range tab.problems {
		tab.t.Errorf("testbrowser: the page reported an error: %s", p)
	}
	for _, d := range tab.dialogs {
		tab.t.Errorf("testbrowser: a page opened a dialog: %s", d)
	}
	for _, n := range tab.network {
		tab.t.Logf("testbrowser: failed load: %s", n)
	}
}

// Problems returns the JavaScript errors and CSP violations recorded so far
// (and not taken).
func (tab *Tab) Problems() []string {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return append([]string(nil), tab.problems...)
}

// TakeProblems returns the recorded JavaScript errors and CSP violations and
// forgets them: for a test that provokes one on purpose.
func (tab *Tab) TakeProblems() []string {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	p := tab.problems
	tab.problems = nil
	return p
}

// Dialogs returns the dialogs opened so far (and not taken).
func (tab *Tab) Dialogs() []string {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return append([]string(nil), tab.dialogs...)
}

// TakeDialogs returns the dialogs opened so far and forgets them.
func (tab *Tab) TakeDialogs() []string {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	d := tab.dialogs
	tab.dialogs = nil
	return d
}

// Requests returns the URLs of the requests the tab has sent so far, in
// order (documents, scripts, the pages' own fetches).
func (tab *Tab) Requests() []string {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return append([]string(nil), tab.requests...)
}

// WaitRequests waits (within d) until the tab has sent n requests whose URL
// contains part, counting from request number from (an earlier
// len(Requests())), and fails the test with what if it has not.
func (tab *Tab) WaitRequests(what string, from int, part string, n int, d time.Duration) {
	tab.t.Helper()
	deadline := time.Now().Add(d)
	for {
		got := 0
		for _, u := range tab.Requests()[from:] {
			if strings.Contains(u, part) {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			tab.t.Fatalf("testbrowser: waited %v for %s: %d of %d requests to %q sent", d, what, got, n, part)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Context returns the tab's chromedp context, for actions this package has
// no method for; bound each use with a deadline (as Run does).
func (tab *Tab) Context() context.Context { return tab.ctx }

// Do runs actions in order within Timeout, failing the test with what (a
// description of the step) when one fails or the deadline passes.
func (tab *Tab) Do(what string, actions ...chromedp.Action[chromedp.Void]) {
	tab.t.Helper()
	Run(tab, what, chromedp.Steps(actions...))
}

// Run runs action on tab within tab.Timeout and returns its value, failing
// the test with what when it fails or the deadline passes.
func Run[T any](tab *Tab, what string, action chromedp.Action[T]) T {
	tab.t.Helper()
	ctx, cancel := context.WithTimeout(tab.ctx, tab.Timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, action)
	if err != nil {
		tab.t.Fatalf("testbrowser: %s: %v (deadline %v)", what, err, tab.Timeout)
	}
	return v
}

// Navigate loads url and waits for its load event.
func (tab *Tab) Navigate(url string) {
	tab.t.Helper()
	tab.Do("open "+url, chromedp.Navigate(url))
}

// Text returns the visible text of the first element matching the CSS
// selector, waiting (within Timeout) for it to be there.
func (tab *Tab) Text(selector string) string {
	tab.t.Helper()
	return strings.TrimSpace(Run(tab, "read the text of "+selector, chromedp.Text(chromedp.CSS(selector), chromedp.NodeReady)))
}

// Count returns how many elements match the CSS selector now.
func (tab *Tab) Count(selector string) int {
	tab.t.Helper()
	return Eval[int](tab, fmt.Sprintf("document.querySelectorAll(%s).length", jsString(selector)))
}

// Exists reports whether an element matches the CSS selector now.
func (tab *Tab) Exists(selector string) bool { return tab.Count(selector) > 0 }

// Attr returns attribute name of the first element matching the CSS
// selector ("" when it has none), waiting (within Timeout) for the element.
func (tab *Tab) Attr(selector, name string) string {
	tab.t.Helper()
	r := Run(tab, "read "+name+" of "+selector, chromedp.AttributeValue(chromedp.CSS(selector), name, chromedp.NodeReady))
	return r.Value
}

// Eval evaluates a JavaScript expression in the page and decodes its value.
func Eval[T any](tab *Tab, expression string) T {
	tab.t.Helper()
	return Run(tab, "evaluate "+expression, chromedp.Evaluate[T](expression))
}

// WaitUntil polls the JavaScript expression until it is truthy, failing
// the test with what when it is not within d. The expression is evaluated
// on whatever page the tab shows, so it outlives a navigation.
func (tab *Tab) WaitUntil(what string, d time.Duration, expression string) {
	tab.t.Helper()
	ctx, cancel := context.WithTimeout(tab.ctx, d)
	defer cancel()
	var last string
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expression+")"))
		if err == nil && ok {
			return
		}
		if err != nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			if last != "" {
				last = " (last error: " + last + ")"
			}
			tab.t.Fatalf("testbrowser: waited %v for %s: %s is still false%s", d, what, expression, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Click clicks the first element matching the CSS selector.
func (tab *Tab) Click(selector string) {
	tab.t.Helper()
	tab.Do("click "+selector, chromedp.Click(chromedp.CSS(selector), chromedp.NodeVisible))
}

// ClickAndWaitLoad clicks the first element matching the CSS selector (a
// link or a submit button) and waits for the page it leads to to load.
func (tab *Tab) ClickAndWaitLoad(selector string) {
	tab.t.Helper()
	Run(tab, "click "+selector+" and wait for the next page",
		chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(selector), chromedp.NodeVisible)))
}

// SetValue sets the value of the form field matching the CSS selector.
func (tab *Tab) SetValue(selector, value string) {
	tab.t.Helper()
	tab.Do("fill "+selector, chromedp.SetValue(chromedp.CSS(selector), value, chromedp.NodeReady))
}

// Screenshot returns a PNG of the viewport.
func (tab *Tab) Screenshot() []byte {
	tab.t.Helper()
	return Run(tab, "take a screenshot", chromedp.CaptureScreenshot())
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
