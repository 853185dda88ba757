package console_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/argo-retry/argo/console"
	"github.com/argo-retry/argo/runtime"
)

// A service mounts the console under its own prefix, behind its own
// authentication; the operator it names goes into the operator trail.
func Example() {
	dir, _ := os.MkdirTemp("", "argo-console-example")
	defer os.RemoveAll(dir)
	db, dialect, err := runtime.OpenDB("sqlite:" + filepath.Join(dir, "argo.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := runtime.Migrate(context.Background(), db, dialect); err != nil {
		log.Fatal(err)
	}

	h, err := console.New(console.Options{
		Inspector:   runtime.NewInspector(db, dialect), // or rt.Inspector() of a running Runtime
		AllowWrites: true,
		Authenticate: func(r *http.Request) (string, bool) {
			user, pass, ok := r.BasicAuth()
			return user, ok && user == "alice" && pass == "s3cret" // the service's own check
		},
		Challenge: `Basic realm="argo"`,
		TraceURL:  "https://traces.example/trace/{traceId}",
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/argo/", http.StripPrefix("/argo", h))

	srv := httptest.NewServer(mux)
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/argo/tasks?state=dead", nil)
	req.SetBasicAuth("alice", "s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status, resp.Header.Get("Content-Type"))
	// Output: 200 OK text/html; charset=utf-8
}
