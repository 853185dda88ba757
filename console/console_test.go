package console_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/argo-retry/argo/console"
)

// TestNewChecksOptions: a missing Inspector or an unusable setting is an
// error saying what to give.
func TestNewChecksOptions(t *testing.T) {
	e := newEnv(t, sqliteDSN(t))
	for want, opts := range map[string]console.Options{
		"Options.Inspector is required":         {},
		"PageSize must be between 1":            {Inspector: e.in, PageSize: 501},
		`TraceURL must contain "{traceId}"`:     {Inspector: e.in, TraceURL: "https://traces.example/"},
		"CSRFKey must hold at least":            {Inspector: e.in, CSRFKey: []byte("short")},
		"Window must be positive and hold":      {Inspector: e.in, Bucket: 1, Window: 1 << 40},
		"CountCap and BulkCap must be positive": {Inspector: e.in, BulkCap: -1},
	} {
		if _, err := console.New(opts); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(%+v) = %v, want %q", opts, err, want)
		}
	}
}

// TestMounted: under a prefix every link is relative, and the prefix
// without its slash redirects to it.
func TestMounted(t *testing.T) {
	e := newEnv(t, sqliteDSN(t))
	mux := http.NewServeMux()
	mux.Handle("/ops/argo/", http.StripPrefix("/ops/argo", e.handler(console.Options{})))
	mux.Handle("/ops/argo", http.StripPrefix("/ops/argo", e.handler(console.Options{})))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("GET", srv.URL+"/ops/argo", nil)
	req.Header.Set(operatorHeader, "alice")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "argo/" {
		t.Fatalf("GET /ops/argo: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	body := get(t, http.StripPrefix("/ops/argo", e.handler(console.Options{})), "/ops/argo/tasks/1")
	for _, want := range []string{`href="../assets/console.css"`, `href="../tasks"`, `data-root="../"`} {
		if !strings.Contains(body, want) {
			t.Errorf("task page under a prefix lacks %q", want)
		}
	}
	if strings.Contains(body, `href="/`) || strings.Contains(body, `src="/`) || strings.Contains(body, `action="/`) {
		t.Error("a link is absolute")
	}
}
