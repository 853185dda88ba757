package main

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// databasePackage matches the import paths of the database drivers and
// helpers argo links at run time (and of the common others).
var databasePackage = regexp.MustCompile(`sqlite|mysql|sqlx|pgx|lib/pq|sqlserver`)

// TestArgogenLinksNoDatabaseDriver guards the cold `go generate` of a new
// module: argogen (and gen) must not depend on package runtime, which links
// the SQLite and MySQL drivers (about a minute of compiling on a cold cache),
// nor on any database driver directly. gen and argogen import argotype.
func TestArgogenLinksNoDatabaseDriver(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list argogen's dependencies: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !strings.Contains(string(out), "github.com/argo-retry/argo/gen") {
		t.Fatalf("go list -deps did not list argogen's dependency gen; want the whole graph:\n%s", out)
	}
	for _, path := range deps {
		if path == "github.com/argo-retry/argo/runtime" {
			t.Errorf("argogen depends on %s, which links the database drivers: gen and cmd/argogen must import argotype instead", path)
		}
		if databasePackage.MatchString(path) {
			t.Errorf("argogen depends on %s, a database package", path)
		}
	}
}
