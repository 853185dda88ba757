package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"time"

	"github.com/argo-retry/argo/console"
	"github.com/argo-retry/argo/runtime"
)

// consolePage is one console page the console workload GETs over HTTP.
type consolePage struct {
	label, path string
}

// consolePages are the pages timed as full HTTP GETs: the list with each
// kind of filter, its next page, a task's page and the overview. first is
// the list's first page (for the next page's key) and deadID a dead task
// with failed attempts (for the task page).
func consolePages(first []*runtime.Task, deadID int64) []consolePage {
	return []consolePage{
		{"GET /tasks", "/tasks"},
		{"GET /tasks?state=dead", "/tasks?state=dead"},
		{"GET /tasks?name=refund", "/tasks?name=refund"},
		{"GET /tasks?tenant=t3", "/tasks?tenant=t3"},
		{"GET /tasks?before=… (next page)", "/tasks?before=" + url.QueryEscape(fmt.Sprint(first[len(first)-1].ID))},
		{"GET /tasks/{id} (dead, 3 attempts)", fmt.Sprintf("/tasks/%d", deadID)},
		{"GET / (overview)", "/"},
	}
}

// timeConsolePages GETs each page consoleReps times from the console's
// handler (console.New on in, read-only, default options) served by an
// httptest server on loopback, reading each whole body, and returns the
// p50 and p95 of each page in seconds, in the order of pages.
func timeConsolePages(ctx context.Context, in *runtime.Inspector, pages []consolePage) (p50, p95 []float64, err error) {
	h, err := console.New(console.Options{Inspector: in})
	if err != nil {
		return nil, nil, err
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := srv.Client()
	for _, p := range pages {
		var took []time.Duration
		for range consoleReps {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+p.path, nil)
			if err != nil {
				return nil, nil, err
			}
			t := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				return nil, nil, err
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return nil, nil, err
			}
			took = append(took, time.Since(t))
			if resp.StatusCode != http.StatusOK {
				return nil, nil, fmt.Errorf("console %s: status %d: %.300s", p.path, resp.StatusCode, body)
			}
		}
		s := sortedDurations(took)
		p50, p95 = append(p50, secs(percentile(s, 50))), append(p95, secs(percentile(s, 95)))
	}
	return p50, p95, nil
}
