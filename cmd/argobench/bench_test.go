package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/argo-retry/argo/runtime"
)

// TestBenchSmall runs every workload at a tiny scale on SQLite, so that the
// bench keeps compiling and running as the runtime changes. It checks that
// the run succeeds and reports every workload, not the figures.
func TestBenchSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the benchmark workloads (a few seconds)")
	}
	var out, log bytes.Buffer
	args := []string{"-scale", "0.001", "-runs", "1", "-claims", "3", "-claimbatch", "20", "-workers", "4", "-submitters", "2", "-memtasks", "30000", "-retryrate", "1000", "-schedulerate", "1000", "-o", "json"}
	if raceEnabled {
		args = append(args, "-only", "sync,insert,work,retry,schedule,claim,memory,audit,order,console")
	}
	code := run(args, &out, &log)
	if code != 0 {
		t.Fatalf("argobench exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), log.String())
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("output is not a JSON report: %v\n%s", err, out.String())
	}
	if len(rep.Errors) > 0 {
		t.Fatalf("errors: %v", rep.Errors)
	}
	seen := map[string]bool{}
	for _, r := range rep.Rows {
		seen[strings.SplitN(r.Workload, " ", 2)[0]] = true
		if r.Argo == nil {
			t.Errorf("%s %s: no argo figure", r.Workload, r.Metric)
		}
	}
	for _, w := range []string{"1", "2", "3", "4", "4b", "5", "6", "7", "8"} {
		if !seen[w] {
			t.Errorf("workload %s missing from the report", w)
		}
	}
	if len(rep.Plans) == 0 || len(rep.Audit) == 0 {
		t.Errorf("report has %d plans and %d audit rows, want some of each", len(rep.Plans), len(rep.Audit))
	}
	if rep.Env.Server == "" || rep.Env.Durability["synchronous"] == "" {
		t.Errorf("environment not recorded: %+v", rep.Env)
	}

	// The text table renders.
	var text bytes.Buffer
	rep.print(&text)
	if !strings.Contains(text.String(), "argo/hand") {
		t.Errorf("text table lacks its header:\n%s", text.String())
	}
}

func TestUsage(t *testing.T) {
	var out, log bytes.Buffer
	if code := run([]string{"-only", "nope"}, &out, &log); code != 2 {
		t.Errorf("unknown workload: exit %d, want 2", code)
	}
	if code := run([]string{"-scale", "0"}, &out, &log); code != 2 {
		t.Errorf("-scale 0: exit %d, want 2", code)
	}
}

// TestRedact: the report shows the DSN without its password.
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"mysql:root:secret@tcp(h:1)/db": "mysql:root:***@tcp(h:1)/db",
		"mysql:root@tcp(h:1)/db":        "mysql:root@tcp(h:1)/db",
		"sqlite:/tmp/x.db":              "sqlite:/tmp/x.db",
	} {
		if got := runtime.RedactDSN(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}
