package alertchannel

import (
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/testwait"
)

// request is what a fake endpoint received.
type request struct {
	Query  url.Values
	Header http.Header
	Body   []byte
	At     time.Time
}

// fakeEndpoint is a platform's webhook on loopback. check verifies a
// request as the platform does and returns the platform's error reply
// ("" accepts it); reply, if set, answers the n-th accepted request (from
// 1) instead of ok.
type fakeEndpoint struct {
	t     *testing.T
	srv   *httptest.Server
	ok    string
	check func(r request) string
	reply func(n int) (status int, body string)

	mu       sync.Mutex
	accepted []request
	refused  []string
	calls    int
}

func newFakeEndpoint(t *testing.T, ok string, check func(r request) string) *fakeEndpoint {
	f := &fakeEndpoint{t: t, ok: ok, check: check}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := request{Query: r.URL.Query(), Header: r.Header.Clone(), Body: body, At: time.Now()}
		f.mu.Lock()
		f.calls++
		var status = http.StatusOK
		var answer string
		switch {
		case r.Method != http.MethodPost:
			status, answer = http.StatusMethodNotAllowed, "POST only"
			f.refused = append(f.refused, "method "+r.Method)
		case r.Header.Get("Content-Type") != "application/json; charset=utf-8":
			status, answer = http.StatusUnsupportedMediaType, "want JSON"
			f.refused = append(f.refused, "content type "+r.Header.Get("Content-Type"))
		default:
			if msg := f.check(req); msg != "" {
				answer = msg
				f.refused = append(f.refused, msg)
			} else {
				f.accepted = append(f.accepted, req)
				answer = f.ok
				if f.reply != nil {
					status, answer = f.reply(len(f.accepted))
				}
			}
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeEndpoint) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.accepted...)
}

func (f *fakeEndpoint) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// noRefusals fails the test if the fake refused a request.
func (f *fakeEndpoint) noRefusals() {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.refused) > 0 {
		f.t.Fatalf("the fake endpoint refused %d requests: %q", len(f.refused), f.refused)
	}
}

// decode unmarshals a request body into a map.
func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, body)
	}
	return m
}

// path reads a nested string or returns "" (for messages).
func path(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = obj[k]
	}
	return v
}

// recorder is an Observer counting outcomes per channel.
type recorder struct {
	mu sync.Mutex
	n  map[string]int // "channel/outcome"
}

func (r *recorder) AlertChannelEvent(channel, outcome string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[channel+"/"+outcome]++
}

func (r *recorder) get(channel, outcome string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[channel+"/"+outcome]
}

// manualTimers replaces a channel's window timers: fire ends them.
type manualTimers struct {
	mu      sync.Mutex
	funcs   []func()
	stopped []bool
}

type manualTimer struct {
	m *manualTimers
	i int
}

func (t manualTimer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	was := !t.m.stopped[t.i]
	t.m.stopped[t.i] = true
	return was
}

func useManualTimers(c *Channel) *manualTimers {
	m := &manualTimers{}
	c.afterFunc = func(d time.Duration, f func()) stopper {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.funcs = append(m.funcs, f)
		m.stopped = append(m.stopped, false)
		return manualTimer{m, len(m.funcs) - 1}
	}
	return m
}

// open returns how many timers were started.
func (m *manualTimers) started() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.funcs)
}

// fire ends every window not ended yet, as its timer would.
func (m *manualTimers) fire() {
	m.mu.Lock()
	var due []func()
	for i, f := range m.funcs {
		if !m.stopped[i] {
			m.stopped[i] = true
			due = append(due, f)
		}
	}
	m.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// alert returns an alert of task name about task id.
func alert(name string, id int64, errText string) argotype.AlertEvent {
	return argotype.AlertEvent{
		AlertEnv:   argotype.AlertEnv{TaskName: name, TaskID: id, ExecuteTimes: 3, MaxAttempts: 5, LastError: errText, WillRetry: true},
		Expression: "executeTimes >= 3",
		At:         time.Date(2026, 11, 22, 21, 0, 0, 0, time.UTC),
	}
}

// waitFor waits until cond holds, failing with what after the deadline
// (testwait.For).
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, within, what, cond)
}

// TestMain sends the channels' default logger to the test output only
// with -v: the tests provoke failures the channels log.
func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Verbose() {
		slog.SetDefault(slog.New(slog.DiscardHandler))
	}
	os.Exit(m.Run())
}
